/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_launch: the launchers of `banyan cluster start` as far as they
    build things: shell words and quoting, host lists, engines spread over
    hosts, the checks of each launcher, and what --dry-run prints, compared
    with tests/data/launch/ byte for byte (the ssh command lines, the host
    script, the srun step, the sbatch script, the mpiexec line). Runs
    nothing.  */
#define _GNU_SOURCE //  open_memstream
#include "bn_hostscript.h"
#include "bn_launch.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_DATA BN_SOURCE_DIR "/tests/data/launch/"

//  The controller's command line every dry run starts with.
static char *s_controller[] = {"/opt/banyan/bin/banyan-controller",
                               "--profile-dir",
                               "/home/ada/.banyan/profile_default",
                               "--ip",
                               "198.18.0.254",
                               NULL};

//  A plan as cluster start fills it before prepare.
static bn_launch_plan_t
s_plan (int n, zlist_t *hosts)
{
    bn_launch_plan_t plan = {.profile_dir = "/home/ada/.banyan/profile_default",
                             .cluster_id = "",
                             .n = n,
                             .hosts = hosts,
                             .engine = "/opt/banyan/bin/banyan-engine",
                             .scheduler = "/opt/banyan/bin/banyan-scheduler",
                             .log_level = "warn"};
    return plan;
}

static zlist_t *
s_hosts (const char *spec)
{
    char error[256];
    zlist_t *hosts = bn_launch_hosts (spec, error, sizeof error);
    ck_assert_msg (hosts != NULL, "%s", error);
    return hosts;
}

//  What ops prints for plan (prepared first), as a string.
static char *
s_dry_run (const bn_launch_ops_t *ops, bn_launch_plan_t *plan)
{
    char error[512] = "";
    ck_assert_msg (ops->prepare (plan, error, sizeof error) == 0, "%s", error);
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream (&text, &size);
    ck_assert_ptr_nonnull (out);
    ck_assert_int_eq (bn_launch_print (ops, plan, s_controller, out), 0);
    fclose (out);
    return text;
}

//  text is the file name in tests/data/launch/, byte for byte; else the
//  text goes to <build>/launch-<name>.actual and the first difference is
//  reported.
static void
s_expect_file (const char *name, const char *text)
{
    char path[512];
    snprintf (path, sizeof path, S_DATA "%s", name);
    FILE *file = fopen (path, "r");
    ck_assert_msg (file != NULL, "cannot read %s", path);
    char *expected = NULL;
    size_t size = 0;
    if (getdelim (&expected, &size, 0, file) < 0) {
        free (expected);
        expected = strdup ("");
    }
    fclose (file);
    if (strcmp (expected, text) != 0) {
        char actual[512];
        snprintf (actual, sizeof actual, BN_BUILD_DIR "/launch-%s.actual",
                  name);
        FILE *out = fopen (actual, "w");
        if (out) {
            fputs (text, out);
            fclose (out);
        }
        size_t at = 0, line = 1;
        while (expected[at] && expected[at] == text[at]) {
            if (text[at] == '\n')
                line++;
            at++;
        }
        ck_abort_msg ("%s differs at line %zu; the output is in %s", path, line,
                      actual);
    }
    free (expected);
}

START_TEST (test_usage)
{
    //  cluster start --launcher ssh --hosts h1,h2,h3 -n 6: one ssh session
    //  a host, each running the host script with its rank
    const bn_launch_ops_t *ops = bn_launch_find ("ssh");
    ck_assert_ptr_nonnull (ops);
    ck_assert (ops->remote);
    zlist_t *hosts = s_hosts ("h1,h2,h3");
    bn_launch_plan_t plan = s_plan (6, hosts);
    char error[256];
    ck_assert_int_eq (ops->prepare (&plan, error, sizeof error), 0);
    ck_assert_int_eq (plan.nhosts, 3);
    ck_assert_int_eq (plan.engines_per_host, 2);
    zlistx_t *commands = ops->commands (&plan);
    ck_assert_int_eq (zlistx_size (commands), 3);
    bn_launch_cmd_t *command = zlistx_first (commands);
    command = zlistx_next (commands);
    ck_assert_str_eq (command->label, "h2");
    ck_assert_int_eq (command->info, BN_LAUNCH_INFO_STDIN);
    ck_assert_int_eq (command->first, 2);
    ck_assert_int_eq (command->count, 2);
    ck_assert_str_eq (command->argv[0], "ssh");
    ck_assert_str_eq (command->argv[1], "-o");
    ck_assert_str_eq (command->argv[2], "BatchMode=yes");
    ck_assert_str_eq (command->argv[3], "h2");
    char *script = bn_hostscript (&plan, "$1", BN_LAUNCH_INFO_STDIN);
    char *remote = zsys_sprintf ("sh -c '%s' banyan-host 1", script);
    ck_assert_str_eq (command->argv[4], remote);
    ck_assert_ptr_null (command->argv[5]);
    ck_assert_str_eq (command->script, script);
    ck_assert_ptr_null (strchr (script, '\''));
    free (remote);
    free (script);
    zlistx_destroy (&commands);
    zlist_destroy (&hosts);

    ck_assert_ptr_eq (bn_launch_find ("local"), &bn_launch_local);
    ck_assert_ptr_eq (bn_launch_find ("slurm"), &bn_launch_slurm);
    ck_assert_ptr_eq (bn_launch_find ("mpiexec"), &bn_launch_mpiexec);
    ck_assert_ptr_null (bn_launch_find ("pbs"));
    ck_assert_ptr_null (bn_launch_find (NULL));
}
END_TEST

START_TEST (test_words)
{
    //  --ssh-cmd as sh splits it
    char **words = bn_launch_words (
        "  ssh -i 'my key'  -o \"ProxyCommand=nc %h \\\"22\\\"\" a\\ b ''");
    ck_assert_ptr_nonnull (words);
    ck_assert_int_eq (bn_launch_words_size (words), 7);
    ck_assert_str_eq (words[0], "ssh");
    ck_assert_str_eq (words[1], "-i");
    ck_assert_str_eq (words[2], "my key");
    ck_assert_str_eq (words[3], "-o");
    ck_assert_str_eq (words[4], "ProxyCommand=nc %h \"22\"");
    ck_assert_str_eq (words[5], "a b");
    //  An empty word stays one
    ck_assert_str_eq (words[6], "");
    bn_launch_words_free (words);
    //  Nothing, or an open quote, is no command
    ck_assert_ptr_null (bn_launch_words ("   "));
    ck_assert_ptr_null (bn_launch_words ("ssh -o 'open"));
    ck_assert_ptr_null (bn_launch_words ("ssh \"open"));

    //  Quoting gives back what sh reads
    char *quoted = bn_launch_quote ("/opt/banyan/bin/banyan-engine");
    ck_assert_str_eq (quoted, "/opt/banyan/bin/banyan-engine");
    free (quoted);
    quoted = bn_launch_quote ("it's a $x");
    ck_assert_str_eq (quoted, "'it'\\''s a $x'");
    words = bn_launch_words (quoted);
    ck_assert_str_eq (words[0], "it's a $x");
    bn_launch_words_free (words);
    free (quoted);
    quoted = bn_launch_quote ("");
    ck_assert_str_eq (quoted, "''");
    free (quoted);
}
END_TEST

START_TEST (test_hosts)
{
    char error[256] = "";
    zlist_t *hosts = bn_launch_hosts (" h1, h2,,h3 ", error, sizeof error);
    ck_assert_int_eq (zlist_size (hosts), 3);
    ck_assert_str_eq (zlist_first (hosts), "h1");
    ck_assert_str_eq (zlist_next (hosts), "h2");
    ck_assert_str_eq (zlist_next (hosts), "h3");
    zlist_destroy (&hosts);

    //  @FILE: one a line, comments and blank lines skipped
    char path[] = "/tmp/check_bn_launch.XXXXXX";
    int fd = mkstemp (path);
    ck_assert_int_ge (fd, 0);
    const char *text = "# the rack\nnode1\n\n  node2  # the big one\n";
    ck_assert_int_eq (write (fd, text, strlen (text)), (int)strlen (text));
    close (fd);
    char spec[64];
    snprintf (spec, sizeof spec, "@%s", path);
    hosts = bn_launch_hosts (spec, error, sizeof error);
    ck_assert_int_eq (zlist_size (hosts), 2);
    ck_assert_str_eq (zlist_first (hosts), "node1");
    ck_assert_str_eq (zlist_next (hosts), "node2");
    zlist_destroy (&hosts);
    unlink (path);

    //  What cannot be a host, and no hosts at all, are errors that say so
    ck_assert_ptr_null (bn_launch_hosts ("h1,h'2", error, sizeof error));
    ck_assert_str_eq (error, "'h'2' is not a host name");
    ck_assert_ptr_null (
        bn_launch_hosts ("-oProxyCommand=x", error, sizeof error));
    ck_assert_str_eq (error, "'-oProxyCommand=x' is not a host name");
    ck_assert_ptr_null (bn_launch_hosts (" , ", error, sizeof error));
    ck_assert_str_eq (error, "no hosts in ' , '");
    ck_assert_ptr_null (
        bn_launch_hosts ("@/nonexistent/hosts", error, sizeof error));
    ck_assert_str_eq (error, "cannot read the host file /nonexistent/hosts: "
                             "No such file or directory");
}
END_TEST

START_TEST (test_spread)
{
    char error[256];
    zlist_t *hosts = s_hosts ("a,b,c");
    //  10 over 3 hosts: 4, 4, 2
    bn_launch_plan_t plan = s_plan (10, hosts);
    ck_assert_int_eq (bn_launch_spread (&plan, 0, error, sizeof error), 0);
    ck_assert_int_eq (plan.nhosts, 3);
    ck_assert_int_eq (plan.engines_per_host, 4);
    //  2 over 3 hosts: the third is not needed
    plan = s_plan (2, hosts);
    ck_assert_int_eq (bn_launch_spread (&plan, 0, error, sizeof error), 0);
    ck_assert_int_eq (plan.nhosts, 2);
    ck_assert_int_eq (plan.engines_per_host, 1);
    //  --engines-per-host: as many hosts as that takes
    plan = s_plan (10, NULL);
    plan.per_host = 4;
    ck_assert_int_eq (bn_launch_spread (&plan, 0, error, sizeof error), 0);
    ck_assert_int_eq (plan.nhosts, 3);
    ck_assert_int_eq (plan.engines_per_host, 4);
    //  ...which the hosts given may not have
    plan = s_plan (10, hosts);
    plan.per_host = 3;
    ck_assert_int_eq (bn_launch_spread (&plan, 0, error, sizeof error), -1);
    ck_assert_str_eq (error, "-n 10 at 3 engines a host needs 4 hosts, and "
                             "there are only 3");
    //  A Slurm allocation's nodes
    plan = s_plan (5, NULL);
    ck_assert_int_eq (bn_launch_spread (&plan, 2, error, sizeof error), 0);
    ck_assert_int_eq (plan.nhosts, 2);
    ck_assert_int_eq (plan.engines_per_host, 3);
    //  Nothing says where
    plan = s_plan (5, NULL);
    ck_assert_int_eq (bn_launch_spread (&plan, 0, error, sizeof error), -1);
    ck_assert_str_eq (error, "say where the engines go: --hosts H1,H2,... or "
                             "--engines-per-host K");
    //  No engines, no hosts
    plan = s_plan (0, hosts);
    ck_assert_int_eq (bn_launch_spread (&plan, 0, error, sizeof error), 0);
    ck_assert_int_eq (plan.nhosts, 0);
    zlist_destroy (&hosts);
}
END_TEST

//  ops refuses plan with exactly this message.
static void
s_refuses (const char *launcher, bn_launch_plan_t *plan, const char *message)
{
    char error[512] = "";
    ck_assert_int_eq (
        bn_launch_find (launcher)->prepare (plan, error, sizeof error), -1);
    ck_assert_str_eq (error, message);
}

START_TEST (test_prepare)
{
    zlist_t *hosts = s_hosts ("a,b");
    bn_launch_plan_t plan = s_plan (4, NULL);
    s_refuses ("ssh", &plan,
               "--launcher ssh needs --hosts H1,H2,... or --hosts @FILE");
    plan = s_plan (4, hosts);
    s_refuses ("local", &plan,
               "--hosts is for the ssh, slurm and mpiexec launchers, not "
               "local");
    plan = s_plan (4, NULL);
    plan.ssh_cmd = "ssh";
    s_refuses ("local", &plan,
               "--ssh-cmd is for the ssh, slurm and mpiexec launchers, not "
               "local");
    plan = s_plan (4, hosts);
    plan.ssh_cmd = "ssh -o 'Batch";
    s_refuses ("ssh", &plan, "--ssh-cmd 'ssh -o 'Batch' is not a command");
    plan = s_plan (4, hosts);
    plan.engine_cmd = "ipengine --log-level='WARN'";
    s_refuses ("ssh", &plan,
               "--engine-cmd: write it without single quotes (the host "
               "script is single-quoted)");
    plan = s_plan (4, hosts);
    plan.min_hosts = 3;
    s_refuses ("ssh", &plan,
               "--min-hosts 3 is more than the 2 hosts the engines go to");
    plan = s_plan (4, hosts);
    plan.ssh_cmd = "ssh";
    s_refuses ("mpiexec", &plan, "--ssh-cmd is not for the mpiexec launcher");
    plan = s_plan (4, NULL);
    s_refuses ("mpiexec", &plan,
               "say where the engines go: --hosts H1,H2,... or "
               "--engines-per-host K");
    unsetenv ("SLURM_JOB_ID");
    plan = s_plan (4, NULL);
    s_refuses ("slurm", &plan,
               "say where the engines go: --hosts H1,H2,... or "
               "--engines-per-host K");
    setenv ("SLURM_JOB_ID", "77", 1);
    unsetenv ("SLURM_JOB_NUM_NODES");
    unsetenv ("SLURM_NNODES");
    plan = s_plan (4, NULL);
    s_refuses ("slurm", &plan,
               "inside Slurm job 77, but SLURM_JOB_NUM_NODES does not say "
               "how many nodes it has");
    plan = s_plan (4, NULL);
    plan.batch_template = "#!/bin/sh\nsrun {program_and_args}\n";
    s_refuses ("slurm", &plan,
               "--batch-template is for sbatch, outside an allocation; this "
               "runs inside Slurm job 77");
    unsetenv ("SLURM_JOB_ID");
    zlist_destroy (&hosts);
}
END_TEST

START_TEST (test_dry_run_ssh)
{
    //  --ssh-cmd as ipcluster's ssh_cmd + ssh_args; 7 engines, 3 a host
    zlist_t *hosts = s_hosts ("h1,h2,h3");
    bn_launch_plan_t plan = s_plan (7, hosts);
    plan.ssh_cmd = "ssh -i /home/ada/.ssh/id_ed25519 -o BatchMode=yes";
    char *text = s_dry_run (&bn_launch_ssh, &plan);
    s_expect_file ("ssh.sh", text);
    free (text);
    zlist_destroy (&hosts);
}
END_TEST

START_TEST (test_dry_run_ssh_stock)
{
    //  Stock ipengines, installed under another prefix on the hosts
    zlist_t *hosts = s_hosts ("node1,node2");
    bn_launch_plan_t plan = s_plan (4, hosts);
    plan.engine_cmd = "/usr/bin/ipengine --log-level=WARN";
    plan.min_hosts = 1;
    char *text = s_dry_run (&bn_launch_ssh, &plan);
    s_expect_file ("ssh-stock.sh", text);
    free (text);
    zlist_destroy (&hosts);
}
END_TEST

START_TEST (test_dry_run_host_node)
{
    //  --host-node: each host's node first, its engines on its file; the
    //  programs under another prefix there
    zlist_t *hosts = s_hosts ("h1,h2");
    bn_launch_plan_t plan = s_plan (4, hosts);
    plan.host_node = true;
    plan.remote_prefix = "/usr/local/";
    plan.per_process = 1;
    char *text = s_dry_run (&bn_launch_ssh, &plan);
    s_expect_file ("ssh-host-node.sh", text);
    free (text);
    zlist_destroy (&hosts);
}
END_TEST

START_TEST (test_dry_run_srun)
{
    //  Inside `salloc -N 3`: one step, one task a node
    setenv ("SLURM_JOB_ID", "4242", 1);
    setenv ("SLURM_JOB_NUM_NODES", "3", 1);
    bn_launch_plan_t plan = s_plan (8, NULL);
    char *text = s_dry_run (&bn_launch_slurm, &plan);
    ck_assert_str_eq (plan.job_id, "4242");
    s_expect_file ("srun.sh", text);
    free (text);
    unsetenv ("SLURM_JOB_ID");
    unsetenv ("SLURM_JOB_NUM_NODES");
}
END_TEST

START_TEST (test_dry_run_sbatch)
{
    //  Outside an allocation: sbatch of the generated batch script
    unsetenv ("SLURM_JOB_ID");
    zlist_t *hosts = s_hosts ("h1,h2,h3,h4");
    bn_launch_plan_t plan = s_plan (10, hosts);
    plan.cluster_id = "demo";
    plan.per_host = 4;
    char *text = s_dry_run (&bn_launch_slurm, &plan);
    ck_assert_ptr_null (plan.job_id);
    s_expect_file ("sbatch.sh", text);
    free (text);
    zlist_destroy (&hosts);
}
END_TEST

START_TEST (test_dry_run_sbatch_template)
{
    //  --batch-template: the user's script, placeholders filled in
    unsetenv ("SLURM_JOB_ID");
    bn_launch_plan_t plan = s_plan (6, NULL);
    plan.per_host = 2;
    plan.batch_template = "#!/bin/bash\n"
                          "#SBATCH --job-name={job_name}\n"
                          "#SBATCH --nodes={hosts} --ntasks={hosts}\n"
                          "#SBATCH --account=physics --time=01:00:00\n"
                          "#SBATCH --output={output_file}\n"
                          "# {n} engines of cluster '{cluster_id}' in "
                          "{profile_dir}; {unknown} stays\n"
                          "module load banyan\n"
                          "srun --mpi=none {program_and_args}\n";
    char *text = s_dry_run (&bn_launch_slurm, &plan);
    s_expect_file ("sbatch-template.sh", text);
    free (text);
}
END_TEST

START_TEST (test_dry_run_mpiexec)
{
    //  Two engines a process, two processes a host
    zlist_t *hosts = s_hosts ("h1,h2,h3,h4");
    bn_launch_plan_t plan = s_plan (14, hosts);
    plan.per_process = 2;
    plan.mpiexec_cmd = "mpiexec.hydra -launcher ssh";
    char *text = s_dry_run (&bn_launch_mpiexec, &plan);
    s_expect_file ("mpiexec.sh", text);
    free (text);
    zlist_destroy (&hosts);
}
END_TEST

START_TEST (test_dry_run_local)
{
    zlist_t *args = zlist_new ();
    zlist_append (args, "--log-level");
    zlist_append (args, "warn");
    bn_launch_plan_t plan = s_plan (3, NULL);
    plan.per_process = 2;
    plan.engine_args = args;
    char *text = s_dry_run (&bn_launch_local, &plan);
    s_expect_file ("local.sh", text);
    free (text);
    zlist_destroy (&args);
}
END_TEST

START_TEST (test_report)
{
    char line[] = "banyan-host rank=2 host=h3 pgid=812 first=8 count=4 "
                  "pids=815,816 node=813 step=4242.0\n";
    bn_hostscript_report_t report;
    ck_assert_int_eq (bn_hostscript_parse (line, &report), 0);
    ck_assert (!report.exit);
    ck_assert_int_eq (report.rank, 2);
    ck_assert_str_eq (report.host, "h3");
    ck_assert_int_eq (report.pgid, 812);
    ck_assert_int_eq (report.first, 8);
    ck_assert_int_eq (report.count, 4);
    ck_assert_str_eq (report.pids, "815,816");
    ck_assert_int_eq (report.node, 813);
    ck_assert_str_eq (report.step, "4242.0");
    char none[] = "banyan-host rank=0 host=a pgid=1 first=0 count=0 pids=";
    ck_assert_int_eq (bn_hostscript_parse (none, &report), 0);
    ck_assert_str_eq (report.pids, "");
    ck_assert_str_eq (report.step, "");
    char exit_line[] = "banyan-exit host=h3 pid=815 status=143";
    ck_assert_int_eq (bn_hostscript_parse (exit_line, &report), 0);
    ck_assert (report.exit);
    ck_assert_int_eq (report.pid, 815);
    ck_assert_int_eq (report.status, 143);
    //  What a host or a stray line could say instead
    const char *bad[] = {"",
                         "hello",
                         "banyan-host",
                         "banyan-host host=a",
                         "banyan-host rank=x host=a pgid=1 first=0 count=0 "
                         "pids=",
                         "banyan-host rank=0 host= pgid=1 first=0 count=0 "
                         "pids=",
                         "banyan-exit host=a pid=-1 status=0",
                         "banyan-exit pid=1 status=0"};
    for (size_t index = 0; index < sizeof bad / sizeof bad[0]; index++) {
        char copy[200];
        snprintf (copy, sizeof copy, "%s", bad[index]);
        ck_assert_msg (bn_hostscript_parse (copy, &report) == -1, "parsed '%s'",
                       bad[index]);
    }
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_launch");
    TCase *tc = tcase_create ("launch");
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_words);
    tcase_add_test (tc, test_hosts);
    tcase_add_test (tc, test_spread);
    tcase_add_test (tc, test_prepare);
    tcase_add_test (tc, test_dry_run_ssh);
    tcase_add_test (tc, test_dry_run_ssh_stock);
    tcase_add_test (tc, test_dry_run_host_node);
    tcase_add_test (tc, test_dry_run_srun);
    tcase_add_test (tc, test_dry_run_sbatch);
    tcase_add_test (tc, test_dry_run_sbatch_template);
    tcase_add_test (tc, test_dry_run_mpiexec);
    tcase_add_test (tc, test_dry_run_local);
    tcase_add_test (tc, test_report);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
