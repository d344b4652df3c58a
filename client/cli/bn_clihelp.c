/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_clihelp: help texts, one table for --help and the man pages.

    The layout is fixed so that help2man.cmake can turn it into a man page:
    a "Usage:" line, a description, then sections whose title is a line
    ending in ':' with option lines indented by two spaces.  */
#include "bn_clihelp.h"

#include <assert.h>
#include <string.h>

#ifndef BANYAN_VERSION
#define BANYAN_VERSION "unknown"
#endif

typedef struct {
    const char *name;        //  "" for banyan itself
    const char *usage;       //  After "Usage: banyan "
    const char *summary;     //  One line, no final period
    const char *description; //  Paragraphs after the summary, or ""
    const char *options;     //  The command's own options, or NULL
    bool cluster_options;    //  Takes the options that find a cluster
    bool file_option;        //  Takes --file
    const char *exit_status; //  Exit status lines, or NULL
    const char *examples;    //  Example lines
    const char *timeout;     //  What --timeout bounds, or NULL for the
                             //  connection only
} s_help_t;

#define S_COMMON_EXIT                                                          \
    "  0   success\n"                                                          \
    "  1   failure (reported on stderr)\n"                                     \
    "  2   usage error\n"                                                      \
    "  12  no cluster: no connection file or no controller answers\n"

static const s_help_t s_helps[] = {
    {"", "COMMAND [OPTIONS] [ARGS...]",
     "start, use and stop banyan clusters of engines",
     "banyan starts a controller and engines as one process group, runs\n"
     "shell commands and named functions on the engines, and stops them\n"
     "again. It is modelled on ipcluster and on clush/pdsh.\n"
     "\n"
     "Commands:\n"
     "  cluster start   start a controller and N engines\n"
     "  cluster stop    stop a cluster and every process of it\n"
     "  cluster add     add engines to a running cluster\n"
     "  cluster list    list the clusters of a profile or of all profiles\n"
     "  cluster clean   remove stale pid and connection files\n"
     "  engines         list the registered engines\n"
     "  px              run a shell command on engines\n"
     "  apply           call a named function on engines\n"
     "  push            store a file's bytes under a name on engines\n"
     "  pull            print a named value from engines\n"
     "  status          summary of a cluster\n"
     "  history         the requests the hub has records of, a row each\n"
     "  result          the result of a request, whichever client sent it\n"
     "  purge           drop the hub's records of finished requests\n"
     "  stats           the counters every actor of the controller keeps\n"
     "  config show     effective settings and where each came from\n"
     "\n"
     "Run 'banyan COMMAND --help' for the options of a command.\n",
     "  -h, --help              print this help and exit\n"
     "      --version           print the version and exit\n",
     false, false, NULL,
     "  banyan cluster start -n 8\n"
     "  banyan px -b uname -r\n"
     "  banyan cluster stop\n",
     NULL},

    {"cluster", "cluster {start|stop|add|list|clean} [OPTIONS]",
     "manage clusters: a controller and its engines, as one process group",
     "Commands:\n"
     "  start   start a controller and N engines\n"
     "  stop    stop a cluster and every process of it\n"
     "  add     add engines to a running cluster\n"
     "  list    list the clusters of a profile or of all profiles\n"
     "  clean   remove stale pid and connection files\n"
     "\n"
     "Run 'banyan cluster COMMAND --help' for the options of a command.\n",
     "  -h, --help              print this help and exit\n"
     "      --version           print the version and exit\n",
     false, false, NULL,
     "  banyan cluster start -n 4 --profile-dir /tmp/p\n"
     "  banyan cluster list\n"
     "  banyan cluster stop --profile-dir /tmp/p\n",
     NULL},

    {"cluster start", "cluster start -n N [OPTIONS]",
     "start a controller and N engines",
     "Starts banyan-controller and N engines (ceil(N/K) banyan-engine\n"
     "processes of K engines each) as one process group under a small\n"
     "supervisor, and returns once all N engines are registered: the\n"
     "cluster keeps running in the background until 'banyan cluster stop'.\n"
     "(This differs from ipcluster, which stays in the foreground unless\n"
     "given --daemonize; use --foreground for that behaviour.) The\n"
     "supervisor notices at once when a process of the cluster exits, and\n"
     "stops the whole cluster if the controller does.\n"
     "\n"
     "The programs are taken from the folder of the banyan executable, else\n"
     "from PATH. Their output goes to <profile_dir>/log/; the cluster is\n"
     "recorded in <profile_dir>/pid/ for stop, list and clean. If a process\n"
     "fails or the engines do not register in time, the cluster is stopped\n"
     "and nothing is left behind.\n"
     "\n"
     "Launchers (--launcher) put the engines on other hosts; the controller\n"
     "always runs here, and must listen where they reach it (--ip). Each\n"
     "engine host runs one small script by sh -c, the same for every host:\n"
     "it takes the controller's engine connection info (the JSON of\n"
     "ipcontroller-engine.json) from BANYAN_CONNECTION_INFO, or from its\n"
     "standard input over ssh, never from a copied file; starts the host's\n"
     "engines (banyan-engine --count, or --engine-cmd); reports their pids;\n"
     "and stays as their supervisor, so the end of its session or 'cluster\n"
     "stop' ends them. Host r runs engine ids r*K to r*K+K-1, K engines a\n"
     "host. --dry-run prints all of it, the script and every command, as a\n"
     "shell script.\n"
     "  local    engine processes here (the default)\n"
     "  ssh      one ssh session per host of --hosts; a host that cannot be\n"
     "           reached is named, and the cluster starts on the rest if at\n"
     "           least --min-hosts did; 'cluster stop' ends the sessions, and\n"
     "           kills over ssh whatever a lost session left\n"
     "  slurm    inside an allocation (SLURM_JOB_ID set): one srun step, one\n"
     "           task a node; outside one: sbatch of a generated batch script\n"
     "           (job name banyan-engines[-ID], --ntasks, --export=ALL, one\n"
     "           srun step), or --batch-template, whose hosts report in the\n"
     "           job's {output_file}; SLURM_PROCID numbers the hosts;\n"
     "           'cluster stop' cancels the step or the job\n"
     "  mpiexec  MPICH's mpiexec -hosts H1,H2 -ppn 1: one process a host,\n"
     "           numbered by PMI_RANK; a host whose ssh from mpiexec fails\n"
     "           is named at once, and --min-hosts holds as for ssh;\n"
     "           'cluster stop' ends mpiexec\n",
     "  -n, --n N               engines to start (required; 0 starts only the\n"
     "                          controller)\n"
     "  -k, --engines-per-process K\n"
     "                          logical engines per banyan-engine process\n"
     "                          (default: 1 here, all of a host's on hosts)\n"
     "      --depth D           depth of the broadcast scheduler tree\n"
     "                          (default: controller.depth, 1)\n"
     "      --topology SPEC     shape of the broadcast tree: kary:K, "
     "per-level\n"
     "                          fanouts such as 4x16, binomial or auto\n"
     "                          (default: controller.topology, kary:2)\n"
     "      --tree-mode MODE    run the tree's nodes as threads of the\n"
     "                          controller or as banyan-scheduler processes\n"
     "                          (threads|processes; default:\n"
     "                          controller.tree_mode, threads)\n"
     "      --fold N            a tree of threads with at most N leaves runs\n"
     "                          in its root alone, in the tree's order\n"
     "                          (0 = never; default: controller.fold, 8)\n"
     "      --scheme NAME       task scheduler scheme: leastload, lru,\n"
     "                          plainrandom, twobin, weighted, pure or none\n"
     "                          (default: controller.scheme, leastload)\n"
     "      --hwm N             tasks the task scheduler gives an engine at\n"
     "                          once, 0 = unlimited (default:\n"
     "                          controller.task_hwm, 1)\n"
     "      --ip IP             address the controller binds to (default:\n"
     "                          controller.ip, 127.0.0.1)\n"
     "      --ports LO-HI       take every port the controller and its tree\n"
     "                          nodes listen on from LO..HI, and with\n"
     "                          --host-node each host node's (default:\n"
     "                          controller.ports, any)\n"
     "      --curve             CurveZMQ on every controller socket, its\n"
     "                          public key in the connection files (default:\n"
     "                          controller.curve, false)\n"
     "      --db WHERE          the controller's task records: memory, none\n"
     "                          or sqlite:PATH, kept across restarts\n"
     "                          (default: controller.db, memory)\n"
     "      --nodb              keep no task records (--db none)\n"
     "      --restore           give engines that come back to a restarted\n"
     "                          controller their old ids; keeps the\n"
     "                          connection files (default:\n"
     "                          controller.restore, false)\n"
     "      --no-wait           return once the processes are started,\n"
     "                          without waiting for the engines to register\n"
     "      --daemonize         start the cluster in a session of its own, so\n"
     "                          that it is not tied to this terminal\n"
     "      --foreground        stay in the foreground once the engines are\n"
     "                          registered, and stop the cluster on Ctrl-C\n"
     "                          (ipcluster's default)\n"
     "  -q, --quiet             print nothing but errors\n"
     "      --dry-run           print what would run (the controller, the "
     "host\n"
     "                          script, every launch command and batch "
     "script)\n"
     "                          and run nothing\n"
     "      --launcher NAME     local, ssh, slurm or mpiexec (default: local)\n"
     "      --hosts H1,H2,...   the engine hosts, or @FILE with one a line\n"
     "      --engines-per-host K\n"
     "                          engines a host (default: N spread over the\n"
     "                          hosts); without --hosts, the hosts needed\n"
     "      --min-hosts M       start if at least M hosts started their "
     "engines\n"
     "                          (default: all of them)\n"
     "      --location HOST     how engines on other hosts name this one when\n"
     "                          --ip is * (default: controller.location, the\n"
     "                          host name)\n"
     "      --ssh-cmd CMD       ssh program and options (default: ssh -o\n"
     "                          BatchMode=yes), e.g. \"ssh -i KEY -p 2222\"\n"
     "      --mpiexec-cmd CMD   mpiexec program and options (default: "
     "mpiexec)\n"
     "      --remote-prefix DIR banyan's install prefix on the hosts: "
     "programs\n"
     "                          in DIR/bin (default: the same paths as here)\n"
     "      --engine-cmd CMD    start stock engines instead, one a process:\n"
     "                          CMD --file=F with F a private copy of the\n"
     "                          connection info, e.g. ipengine\n"
     "      --batch-template FILE\n"
     "                          the sbatch script to submit, with {job_name},\n"
     "                          {hosts}, {n}, {cluster_id}, {profile_dir},\n"
     "                          {output_file}, {nodelist} and\n"
     "                          {program_and_args} (the host script's "
     "command)\n"
     "      --host-node         start a host node (banyan-scheduler --host,\n"
     "                          doc/hosts.md) on each host before its "
     "engines,\n"
     "                          which connect to it instead of the "
     "controller;\n"
     "                          one that dies is started again, with "
     "its\n"
     "                          host's engines (the same ids) (off by "
     "default)\n",
     true, false,
     "  0   the cluster is running (with --foreground: it was stopped)\n"
     "  1   the cluster could not be started; nothing is left running\n"
     "  2   usage error\n"
     "  10  a cluster with this profile and cluster id is already running\n",
     "  banyan cluster start -n 8\n"
     "  banyan cluster start -n 1024 -k 64 --profile-dir /tmp/big\n"
     "  banyan cluster start -n 4 --cluster-id a --depth 2\n"
     "  banyan cluster start -n 256 --depth 2 --topology kary:16\n"
     "  banyan cluster start -n 8 --ip '*' --curve --ports 60000-60099\n"
     "  banyan cluster start -n 12 --launcher ssh --hosts n1,n2,n3 --ip '*'\n"
     "  banyan cluster start -n 64 --launcher slurm --engines-per-host 16\n"
     "  banyan cluster start -n 8 --launcher mpiexec --hosts @hosts "
     "--dry-run\n",
     "seconds to wait for the connection file and for\n"
     "                          the engines to register (default: 60)\n"},

    {"cluster stop", "cluster stop [OPTIONS]",
     "stop a cluster and every process of it",
     "Asks the cluster's supervisor to stop it (SIGTERM): the engines\n"
     "first, so that they unregister, then the controller, then every other\n"
     "process descended from them (commands that engines started in groups\n"
     "of their own included). Whatever is left after --timeout seconds\n"
     "gets SIGKILL, and the command returns when nothing is\n"
     "left. Removes the cluster's record, its controller pid file and its\n"
     "connection files.\n",
     "  -q, --quiet             print nothing but errors\n", true, false,
     "  0   the cluster was stopped\n"
     "  1   some process could not be stopped\n"
     "  2   usage error\n"
     "  11  no cluster was running (stale files were removed)\n",
     "  banyan cluster stop\n"
     "  banyan cluster stop --profile-dir /tmp/p --cluster-id a\n",
     "seconds the processes get to end after SIGTERM,\n"
     "                          before SIGKILL (default: 10; 30 for a\n"
     "                          cluster on other hosts)\n"},

    {"cluster add", "cluster add -n N [OPTIONS]",
     "add engines to a running cluster",
     "Starts N more engines in a running cluster that 'banyan cluster\n"
     "start' started on this host (the local launcher), as ipcluster's\n"
     "engines command does: the cluster's supervisor starts them, so that\n"
     "they are watched and stopped with the others by 'banyan cluster\n"
     "stop'. They ask for the ids after every engine the cluster has had.\n"
     "Returns once they are registered.\n",
     "  -n N                    engines to add (required)\n"
     "  -k, --engines-per-process K\n"
     "                          engines a banyan-engine process runs\n"
     "                          (default: 1)\n"
     "  -q, --quiet             print nothing but errors\n",
     true, false,
     "  0   the engines were added and registered\n"
     "  1   they could not be added, or did not register in time\n"
     "  2   usage error\n"
     "  12  no cluster started by 'banyan cluster start' runs here\n",
     "  banyan cluster add -n 4\n"
     "  banyan cluster add -n 64 -k 16 --profile-dir /tmp/big\n",
     "seconds to wait for the engines to register\n"
     "                          (default: 60)\n"},

    {"cluster list", "cluster list [OPTIONS]", "list clusters",
     "Lists the clusters recorded in the given profile, or with no profile\n"
     "option in every profile under profile.dir_root: profile, cluster id,\n"
     "state (starting, running, broken: the controller is gone but other\n"
     "processes are not, stale: nothing runs), engines asked for, live\n"
     "engine processes and the process group id. Also lists controllers\n"
     "started by hand (from their pid files).\n",
     NULL, true, false, NULL,
     "  banyan cluster list\n"
     "  banyan cluster list --profile-dir /tmp/p\n",
     NULL},

    {"cluster clean", "cluster clean [OPTIONS]",
     "remove stale pid and connection files",
     "Removes the records of clusters none of whose processes runs, and the\n"
     "controller pid files and connection files that belong to no running\n"
     "controller, in the given profile (default: the default profile).\n"
     "Running clusters are left alone.\n",
     "  -q, --quiet             print nothing but errors\n", true, false, NULL,
     "  banyan cluster clean\n"
     "  banyan cluster clean --profile-dir /tmp/p\n",
     NULL},

    {"engines", "engines [OPTIONS]", "list the registered engines",
     "Prints one line per registered engine: id, uuid, host, pid, state\n"
     "(idle, busy, or gone when its process has died), the requests\n"
     "queued behind the one it runs, and what it runs (a command, or a\n"
     "function as name()) since when (local time). Busy engines say what\n"
     "they run themselves (banyan engines, asked on the control channel,\n"
     "which they answer at once); for 7.1.0 engines the state and queue\n"
     "are the controller's counts of direct requests and tasks. Host and\n"
     "pid are known for engines of a cluster started by 'banyan cluster\n"
     "start' on this host, and shown as '-' otherwise.\n",
     "  -t, --targets SET       list only these engines, e.g. 0-7,12\n", true,
     true, S_COMMON_EXIT,
     "  banyan engines\n"
     "  banyan engines -t 0-3 --profile-dir /tmp/p\n",
     NULL},

    {"px", "px [OPTIONS] COMMAND [ARGS...]", "run a shell command on engines",
     "Runs COMMAND (its words joined by spaces, run by /bin/sh -c) on every\n"
     "engine or on the engines of -t, and prints what each wrote. Each line\n"
     "is prefixed with the engine that wrote it, as IPython's %px does:\n"
     "\"[stdout:3] ...\" on stdout, \"[stderr:3] ...\" and, for a command\n"
     "that failed, \"[status:3] exited with exit code 2\" on stderr. An\n"
     "engine's output is printed when its command has ended, in engine\n"
     "order: on a terminal as it arrives, a batch at a time (what the\n"
     "broadcast tree releases together, every 0.2 s), each batch in engine\n"
     "order; otherwise, when every engine has answered, all of it in\n"
     "engine order, as %px prints it.\n"
     "\n"
     "With -b, engines whose output and status are identical are printed\n"
     "once, as clush -b does, under a header naming them:\n"
     "\n"
     "  ---------------\n"
     "  engines[0-3] (4)\n"
     "  ---------------\n"
     "  output\n"
     "\n"
     "followed by their stderr lines tagged \"[stderr] \" and their status\n"
     "tagged \"[status] \". On a terminal, a progress count appears after a\n"
     "second. The first Ctrl-C prints which engines are still running, the\n"
     "second aborts their commands and exits with status 130. Aborting, as\n"
     "the end of --timeout, ends the command on banyan engines as clush\n"
     "does: its process group gets SIGINT, then SIGTERM, then SIGKILL\n"
     "(engine.abort_grace, 1s, apart), so the engines are free at once.\n"
     "\n"
     "The command goes to the engines as one request through the\n"
     "controller's broadcast tree, which merges their replies (and with -b\n"
     "groups identical ones at its nodes); --direct sends one request per\n"
     "engine through the mux instead. The output is the same either way.\n"
     "\n"
     "Standard input, when it is not a terminal, is read to its end and\n"
     "given to the command on every engine, as clush does ('echo hi |\n"
     "banyan px cat'); it travels once, whatever the number of engines.\n"
     "--no-stdin leaves it unread (the command reads /dev/null), for a px\n"
     "whose standard input never ends.\n",
     "  -t, --targets SET       engines to run on, e.g. 0-7,12 (default: all)\n"
     "  -b, --gather            group engines with identical output and\n"
     "                          status\n"
     "  -S, --max-status        exit with the largest exit status of the\n"
     "                          command on any engine\n"
     "  -q, --quiet             print no status lines, only output\n"
     "      --direct            send one request per engine through the mux\n"
     "                          instead of one through the broadcast tree\n"
     "      --broadcast         through the broadcast tree (the default)\n"
     "      --balanced          run the command once, on whichever engine\n"
     "                          (of -t) the task scheduler finds free\n"
     "      --no-stdin          do not read standard input; the command\n"
     "                          reads /dev/null\n",
     true, true,
     "  0    every engine ran the command, whatever its exit status; with -S,\n"
     "       the largest exit status of the command on any engine\n"
     "  1    some engine could not run it: it died, timed out or was\n"
     "       aborted (with -S: 255)\n"
     "  2    usage error\n"
     "  12   no cluster\n"
     "  130  aborted by a second Ctrl-C\n",
     "  banyan px hostname\n"
     "  banyan px -b uname -r\n"
     "  banyan px -t 0-3 -S 'test -d /scratch'\n"
     "  banyan px --timeout 60 -b 'make -C ~/src test'\n"
     "  banyan px --direct hostname\n"
     "  banyan px --balanced 'make -C ~/src test'\n"
     "  banyan px 'cat > /tmp/job.sh' < job.sh\n",
     "time to wait for the controller (default:\n"
     "                          client.timeout, 10s) and for the results\n"
     "                          (default: no limit); engines that have not\n"
     "                          answered by then are reported as timed out\n"
     "                          and their commands aborted\n"},

    {"apply", "apply [OPTIONS] FUNCTION [ARGS...]",
     "call a named function on engines",
     "Calls the engine function FUNCTION (a built-in such as echo, sum,\n"
     "sleep, or one from a plugin) with ARGS: an argument that reads as an\n"
     "integer is passed as an int, one that reads as a number as a float,\n"
     "@NAME as the value push stored under NAME on each engine (Python's\n"
     "Reference(\"NAME\"); @@ begins a string that starts with @), anything\n"
     "else as a string. Prints each engine's result as a Python repr,\n"
     "\"[3] 42\", in engine order as px does, or with -b grouped as px -b\n"
     "does.\n",
     "  -t, --targets SET       engines to call, e.g. 0-7,12 (default: all)\n"
     "  -b, --gather            group engines with identical results\n"
     "  -q, --quiet             print no status lines, only results\n"
     "      --broadcast         send one request through the broadcast tree\n"
     "      --balanced          call it once, on whichever engine (of -t)\n"
     "                          the task scheduler finds free\n",
     true, true, S_COMMON_EXIT,
     "  banyan apply echo 42\n"
     "  banyan apply --balanced sleep 5\n"
     "  banyan apply -b sum 1 2 3.5\n"
     "  banyan apply -t 0 echo hello\n"
     "  banyan push data input.bin && banyan apply checksum @data\n",
     "time to wait for the controller (default:\n"
     "                          client.timeout, 10s) and for the results\n"
     "                          (default: no limit)\n"},

    {"push", "push [OPTIONS] NAME FILE",
     "store a file's bytes under a name on engines",
     "Reads FILE (- for stdin) and stores its bytes under NAME in the\n"
     "namespace of every engine, or of the engines of -t.\n",
     "  -t, --targets SET       engines to push to (default: all)\n"
     "  -q, --quiet             print nothing on success\n"
     "      --broadcast         send one request through the broadcast tree\n",
     true, true, S_COMMON_EXIT,
     "  banyan push data input.bin\n"
     "  banyan push -t 0-3 config ./settings.json\n",
     "time to wait for the controller (default:\n"
     "                          client.timeout, 10s) and for the results\n"
     "                          (default: no limit)\n"},

    {"pull", "pull [OPTIONS] NAME", "print a named value from engines",
     "Prints the value stored under NAME on each engine as a Python repr,\n"
     "\"[3] b'...'\", or with -b grouped as px -b does.\n",
     "  -t, --targets SET       engines to pull from (default: all)\n"
     "  -b, --gather            group engines with identical values\n"
     "  -q, --quiet             print no status lines, only values\n"
     "      --broadcast         send one request through the broadcast tree\n",
     true, true, S_COMMON_EXIT,
     "  banyan pull data\n"
     "  banyan pull -b -t 0-7 config\n",
     "time to wait for the controller (default:\n"
     "                          client.timeout, 10s) and for the results\n"
     "                          (default: no limit)\n"},

    {"status", "status [OPTIONS]", "summary of a cluster",
     "Prints whether the controller answers, how many engines are\n"
     "registered, their queues (tasks queued, running and completed), the\n"
     "busy engines grouped by what they run and since when (as 'banyan\n"
     "engines' shows it), and what the cluster's record says about its\n"
     "processes.\n",
     NULL, true, true, S_COMMON_EXIT,
     "  banyan status\n"
     "  banyan status --profile-dir /tmp/p\n",
     NULL},

    {"history", "history [OPTIONS]", "list the requests the hub has records of",
     "Prints a table of the requests the hub recorded, oldest submission\n"
     "first: every direct, load-balanced and broadcast request (by default\n"
     "the last 1024 in memory; all of them with banyan-controller --db\n"
     "sqlite:PATH), one row each: its msg_id, when it was submitted and\n"
     "completed, its engines, its status (ok, error, aborted, pending; a\n"
     "broadcast's is error when one engine's is) and what ran. 'banyan\n"
     "result MSG_ID' shows one, a broadcast's engines each.\n",
     "      --json              print the rows as a JSON list of objects\n"
     "                          (msg_id, submitted, completed, engines,\n"
     "                          status, kind, code)\n"
     "      --ids               print only the msg_ids, one a line\n",
     true, true, S_COMMON_EXIT,
     "  banyan history\n"
     "  banyan history --ids | tail -1 | xargs banyan result\n",
     NULL},

    {"result", "result [OPTIONS] MSG_ID",
     "print the result of a request, whichever client sent it",
     "Asks the hub for its record of MSG_ID and prints the engine, the\n"
     "times, the status, the value of an apply (as a Python repr), and what\n"
     "the request wrote to stdout and stderr; for a broadcast, so for each\n"
     "of its engines in engine order, a blank line between them (the hub\n"
     "keeps each engine's part as MSG_ID_<engine uuid>, which Python's\n"
     "get_result reads too). A request still running is reported as\n"
     "pending. Exits 1 if the request failed on some engine or the hub has\n"
     "no record of it.\n",
     NULL, true, true, S_COMMON_EXIT, "  banyan result 6f2c...-4a1b_1234_7\n",
     NULL},

    {"purge", "purge [OPTIONS] [MSG_ID...]",
     "drop the hub's records of finished requests",
     "Drops the hub's records of the MSG_IDs given, and of every finished\n"
     "request of the engines of -t; with neither, of every finished request.\n"
     "A MSG_ID still pending is an error (nothing is dropped).\n",
     "  -t, --targets SET       drop the finished requests of these engines\n",
     true, true, S_COMMON_EXIT,
     "  banyan purge\n"
     "  banyan purge -t 0-3\n"
     "  banyan purge 6f2c...-4a1b_1234_7\n",
     NULL},

    {"stats", "stats [OPTIONS] [ACTOR]",
     "print the counters every actor of the controller keeps",
     "Asks the controller for the counters its actors keep and prints one\n"
     "line per actor, counter and value: the hub (queries, registrations,\n"
     "errors), the heart, the mux, control and iopub relays (messages\n"
     "received and forwarded, and each kind dropped), the task scheduler,\n"
     "the task records, and the broadcast tree, whose nodes appear as\n"
     "broadcast.0 (the root), broadcast.1 and so on (in processes mode with\n"
     "each banyan-scheduler's pid, state and restarts). A nested counter is\n"
     "named with a dot, as records link.delivered. With ACTOR, only that\n"
     "actor and its parts: 'banyan stats broadcast' prints the tree and\n"
     "every node. Counters grow from the controller's start.\n"
     "\n"
     "Only banyan-controller answers (it is banyan's own hub query,\n"
     "bn_stats_request); IPython Parallel's ipcontroller does not, and the\n"
     "command then fails with 'not supported by this controller'.\n",
     "      --json              print the counters as JSON: an object per\n"
     "                          actor as the controller sends them (ACTOR's\n"
     "                          object only, with ACTOR)\n",
     true, true,
     "  0   success\n"
     "  1   failure: the controller does not support it, or no such ACTOR\n"
     "  2   usage error\n"
     "  12  no cluster: no connection file or no controller answers\n",
     "  banyan stats\n"
     "  banyan stats mux\n"
     "  banyan stats broadcast.0 --json\n",
     NULL},

    {"config", "config show [OPTIONS]",
     "print the effective settings and where each came from",
     "Prints every setting with its effective value and its source: the\n"
     "built-in default, a config file, a BANYAN_* environment variable or\n"
     "the command line. Precedence, lowest first: defaults < config file <\n"
     "environment < command line. The config file is --config FILE, else\n"
     "<profile_dir>/banyan.conf if it exists.\n",
     NULL, true, false, NULL,
     "  banyan config show\n"
     "  BANYAN_CONTROLLER_DEPTH=3 banyan config show --profile test\n",
     NULL},
};

#define S_HELPS ((int)(sizeof s_helps / sizeof s_helps[0]))

static const char *s_cluster_options =
    "      --profile NAME      profile to use: the folder\n"
    "                          <profile.dir_root>/profile_NAME (default:\n"
    "                          default, under ~/.banyan)\n"
    "      --profile-dir DIR   profile folder to use instead\n"
    "      --cluster-id ID     cluster id within the profile (default: none)\n"
    "      --config FILE       configuration file (default:\n"
    "                          <profile_dir>/banyan.conf if it exists)\n"
    "      --timeout S         ";

static const char *s_timeout_connect =
    "time to wait for the controller (default:\n"
    "                          client.timeout, 10s)\n";

static const char *s_last_options =
    "      --log-level LEVEL   error, warn, info or debug (default: warn)\n"
    "  -h, --help              print this help and exit\n"
    "      --version           print the version and exit\n";

static const char *s_file_option =
    "      --file FILE         client connection file to use instead of the\n"
    "                          profile's ipcontroller-client.json\n";

static const s_help_t *
s_find (const char *command)
{
    if (!command)
        command = "";
    for (int index = 0; index < S_HELPS; index++)
        if (strcmp (s_helps[index].name, command) == 0)
            return &s_helps[index];
    return NULL;
}

int
bn_clihelp_print (const char *command, FILE *file)
{
    assert (file);
    const s_help_t *help = s_find (command);
    if (!help)
        return -1;
    fprintf (file, "Usage: banyan %s\n\n", help->usage);
    fprintf (file, "banyan%s%s: %s.\n", *help->name ? " " : "", help->name,
             help->summary);
    if (*help->description)
        fprintf (file, "\n%s", help->description);
    if (help->options)
        fprintf (file, "\nOptions:\n%s", help->options);
    if (help->cluster_options)
        fprintf (file, "\nCluster options:\n%s%s%s%s",
                 help->file_option ? s_file_option : "", s_cluster_options,
                 help->timeout ? help->timeout : s_timeout_connect,
                 s_last_options);
    if (help->exit_status)
        fprintf (file, "\nExit status:\n%s", help->exit_status);
    fprintf (file, "\nExamples:\n%s", help->examples);
    return 0;
}

void
bn_clihelp_version (FILE *file)
{
    assert (file);
    fprintf (file, "banyan %s\n", BANYAN_VERSION);
}
