/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_hostscript: the per-host start script of the remote launchers.  */
#define _GNU_SOURCE //  open_memstream
#include "bn_hostscript.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  text in double quotes, as sh reads it back.
static void
s_dquote (FILE *out, const char *text)
{
    fputc ('"', out);
    for (const char *c = text; *c; c++) {
        if (strchr ("\\\"$`", *c))
            fputc ('\\', out);
        fputc (*c, out);
    }
    fputc ('"', out);
}

char *
bn_hostscript_program (const bn_launch_plan_t *plan, const char *here,
                       const char *name)
{
    assert (plan);
    assert (name);
    if (plan->remote_prefix && *plan->remote_prefix) {
        size_t length = strlen (plan->remote_prefix);
        while (length > 1 && plan->remote_prefix[length - 1] == '/')
            length--;
        return zsys_sprintf ("%.*s/bin/%s", (int)length, plan->remote_prefix,
                             name);
    }
    return strdup (here ? here : name);
}

//  The lines that start the engines into $p (pids) and $l (",pid" each);
//  with_file: they read the engine file $j instead of the environment.
static void
s_engines (FILE *out, const bn_launch_plan_t *plan, const char *engine,
           bool with_file)
{
    int per_process =
        plan->per_process > 0 ? plan->per_process : plan->engines_per_host;
    if (per_process < 1)
        per_process = 1;
    fputs ("i=0\n"
           "while [ $i -lt $c ] && [ -z \"$o\" ]; do\n",
           out);
    if (plan->engine_cmd)
        fprintf (out,
                 "    %s --file=\"$j\" >&2 &\n"
                 "    k=1\n",
                 plan->engine_cmd);
    else {
        fprintf (out,
                 "    k=$((c - i))\n"
                 "    [ $k -le %d ] || k=%d\n"
                 "    ",
                 per_process, per_process);
        s_dquote (out, engine);
        fprintf (out, "%s --count $k --id $((f + i)) --log-level %s >&2 &\n",
                 with_file ? " --file \"$j\"" : "",
                 plan->log_level ? plan->log_level : "warn");
    }
    fputs ("    p=\"$p $!\" l=\"$l,$!\"\n"
           "    i=$((i + k))\n"
           "done\n",
           out);
}

char *
bn_hostscript (const bn_launch_plan_t *plan, const char *rank,
               bn_launch_info_t info)
{
    assert (plan);
    assert (rank);
    assert (info == BN_LAUNCH_INFO_STDIN || info == BN_LAUNCH_INFO_ENV);
    char *engine = bn_hostscript_program (plan, plan->engine, "banyan-engine");
    char *scheduler =
        plan->host_node
            ? bn_hostscript_program (plan, plan->scheduler, "banyan-scheduler")
            : NULL;
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream (&text, &size);
    if (!engine || (plan->host_node && !scheduler) || !out) {
        if (out)
            fclose (out);
        free (text);
        free (engine);
        free (scheduler);
        return NULL;
    }
    int per_host = plan->engines_per_host;
    fprintf (out,
             "# banyan: start the engines of this host, report them, end "
             "them when told\n"
             "r=%s\n"
             "f=$((r * %d))\n"
             "c=$((%d - f))\n"
             "[ $c -le %d ] || c=%d\n"
             "[ $c -ge 0 ] || c=0\n"
             "h=$(hostname)\n"
             "p= l= w= n= t= j= z= o=\n",
             rank, per_host, plan->n, per_host, per_host);
    if (info == BN_LAUNCH_INFO_STDIN)
        fputs ("IFS= read -r BANYAN_CONNECTION_INFO || { echo \"banyan-host: "
               "no connection info on $h\" >&2; exit 3; }\n",
               out);
    else
        fputs ("[ -n \"${BANYAN_CONNECTION_INFO:-}\" ] || { echo "
               "\"banyan-host: BANYAN_CONNECTION_INFO is not set on $h\" "
               ">&2; exit 3; }\n",
               out);
    //  Told to stop (o): end the engines started, start no more
    fputs ("export BANYAN_CONNECTION_INFO\n"
           "trap \"o=1; kill -TERM \\$p 2>/dev/null\" HUP INT TERM\n"
           "trap : CHLD\n",
           out);
    if (info == BN_LAUNCH_INFO_STDIN)
        //  The session's end is the sign to stop: a watcher holds its
        //  standard input, nobody else does
        fputs ("exec 3<&0 </dev/null\n"
               "(cat >/dev/null 2>&1 <&3; kill -TERM $$) &\n"
               "w=$!\n"
               "exec 3<&-\n",
               out);
    if (plan->engine_cmd || plan->host_node)
        fputs ("t=$(mktemp -d) || exit 3\n", out);
    if (plan->host_node) {
        //  The host node reads the info (kept in $I for a restart, out of
        //  the engines' environment) and writes a host-local engine file;
        //  the engines connect to it instead of the controller. A: is
        //  process $1 alive (not a zombie)? K: end the engines, report
        //  them. N: start the node and wait for its file. Restarts: a (when
        //  the last), b (how many), v (the exit status once given up)
        fputs (
            "a= b= v=\n"
            "A () {\n"
            "    s=\n"
            "    read x x s x 2>/dev/null </proc/$1/stat\n"
            "    [ -n \"$s\" ] && [ \"$s\" != Z ]\n"
            "}\n"
            "K () {\n"
            "    kill -TERM $p 2>/dev/null\n"
            "    i=0\n"
            "    for e in $p; do\n"
            "        while A $e && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); "
            "done\n"
            "        kill -KILL $e 2>/dev/null\n"
            "        wait $e\n"
            "        echo \"banyan-exit host=$h pid=$e status=$?\"\n"
            "    done\n"
            "    p= l=\n"
            "}\n"
            "j=\"$t/security/ipcontroller-engine.json\"\n"
            "I=$BANYAN_CONNECTION_INFO\n"
            "unset BANYAN_CONNECTION_INFO\n"
            "N () {\n"
            "rm -f \"$j\"\n"
            "BANYAN_CONNECTION_INFO=\"$I\" ",
            out);
        s_dquote (out, scheduler);
        fputs (" --host --profile-dir \"$t\"", out);
        if (plan->ports && *plan->ports) {
            fputs (" --ports ", out);
            s_dquote (out, plan->ports);
        }
        fprintf (out,
                 " --log-level %s >&2 &\n"
                 "n=$!\n"
                 "i=0\n"
                 "until [ -f \"$j\" ] || [ -n \"$o\" ]; do\n"
                 "    if ! kill -0 $n 2>/dev/null || [ $i -ge 300 ]; then\n"
                 "        echo \"banyan-host: the host node on $h wrote no "
                 "$j\" >&2\n"
                 "        kill -TERM $n 2>/dev/null\n"
                 "        return 1\n"
                 "    fi\n"
                 "    sleep 0.1\n"
                 "    i=$((i + 1))\n"
                 "done\n"
                 "}\n"
                 "N || { rm -rf \"$t\"; exit 3; }\n",
                 plan->log_level ? plan->log_level : "warn");
    } else if (plan->engine_cmd)
        //  A stock engine reads a file: a private copy of the info
        fputs ("j=\"$t/ipcontroller-engine.json\"\n"
               "printf \"%s\\n\" \"$BANYAN_CONNECTION_INFO\" > \"$j\" || "
               "exit 3\n"
               "unset BANYAN_CONNECTION_INFO\n",
               out);
    //  With a host node, E starts the engines and R reports them, again
    //  after a restart
    if (plan->host_node)
        fputs ("E () {\n", out);
    s_engines (out, plan, engine, plan->host_node || plan->engine_cmd);
    if (plan->host_node)
        fputs ("}\n"
               "E\n",
               out);
    fputs ("read x x x x g x < /proc/$$/stat\n", out);
    if (plan->host_node)
        fputs ("R () {\n", out);
    fputs ("echo \"banyan-host rank=$r host=$h pgid=$g first=$f count=$c "
           "pids=${l#,}${n:+ node=$n}${SLURM_STEP_ID:+ "
           "step=$SLURM_JOB_ID.$SLURM_STEP_ID}",
           out);
    fputs (plan->host_node ? "${b:+ restart=$b}\"\n}\nR\n" : "\"\n", out);
    fputs ("while :; do\n"
           "    q=\n"
           "    for e in $p; do\n"
           "        s=\n"
           "        read x x s x 2>/dev/null </proc/$e/stat\n"
           "        if [ -n \"$s\" ] && [ \"$s\" != Z ]; then q=\"$q $e\"; "
           "continue; fi\n"
           "        wait $e\n"
           "        echo \"banyan-exit host=$h pid=$e status=$?\"\n"
           "    done\n"
           "    p=$q\n",
           out);
    if (plan->host_node)
        //  The host node died: its engines go with it (they cannot reach
        //  another), and it starts again with engines of the same ids,
        //  unless a restart died within 10 s of starting
        fputs ("    if [ -n \"$n\" ] && [ -z \"$o\" ] && ! A $n; then\n"
               "        wait $n\n"
               "        echo \"banyan-exit host=$h pid=$n status=$?\"\n"
               "        n=\n"
               "        K\n"
               "        read u x </proc/uptime\n"
               "        u=${u%.*}\n"
               "        if [ -z \"$o\" ] && { [ -z \"$b\" ] || [ $((u - a)) "
               "-ge 10 "
               "]; }; then\n"
               "            a=$u b=$((${b:-0} + 1))\n"
               "            if N; then [ -n \"$o\" ] || { E; R; }; else wait "
               "$n; n= v=3; fi\n"
               "        else\n"
               "            v=3\n"
               "        fi\n"
               "    fi\n",
               out);
    fputs ("    [ -n \"$p\" ] || break\n"
           "    if [ -z \"$z\" ] || ! kill -0 $z 2>/dev/null; then\n"
           "        sleep 1 </dev/null >/dev/null 2>&1 &\n"
           "        z=$!\n"
           "    fi\n"
           "    wait $z\n"
           "done\n"
           "if [ -n \"$n\" ]; then\n"
           "    kill -TERM $n 2>/dev/null\n"
           "    wait $n\n"
           "    echo \"banyan-exit host=$h pid=$n status=$?\"\n"
           "fi\n"
           "kill $w $z 2>/dev/null\n"
           "[ -z \"$t\" ] || rm -rf \"$t\"\n",
           out);
    if (plan->host_node)
        fputs ("exit ${v:-0}\n", out);
    free (engine);
    free (scheduler);
    if (fclose (out) != 0) {
        free (text);
        return NULL;
    }
    return text;
}

//  The value of key=... in a report's words, or NULL.
static char *
s_value (char **words, size_t count, const char *key)
{
    size_t length = strlen (key);
    for (size_t index = 0; index < count; index++)
        if (strncmp (words[index], key, length) == 0 &&
            words[index][length] == '=')
            return words[index] + length + 1;
    return NULL;
}

static int
s_int (const char *text, int *value)
{
    if (!text || !*text)
        return -1;
    char *end;
    long number = strtol (text, &end, 10);
    if (*end || number < 0 || number > 0x7fffffff)
        return -1;
    *value = (int)number;
    return 0;
}

int
bn_hostscript_parse (char *line, bn_hostscript_report_t *report)
{
    assert (line);
    assert (report);
    memset (report, 0, sizeof *report);
    char *words[16];
    size_t count = 0;
    char *save = NULL;
    for (char *word = strtok_r (line, " \t\r\n", &save); word && count < 16;
         word = strtok_r (NULL, " \t\r\n", &save))
        words[count++] = word;
    if (count < 2)
        return -1;
    report->host = s_value (words, count, "host");
    if (!report->host || !*report->host)
        return -1;
    if (strcmp (words[0], "banyan-exit") == 0) {
        report->exit = true;
        return s_int (s_value (words, count, "pid"), &report->pid) ||
                       s_int (s_value (words, count, "status"), &report->status)
                   ? -1
                   : 0;
    }
    if (strcmp (words[0], "banyan-host") != 0)
        return -1;
    report->pids = s_value (words, count, "pids");
    report->step = s_value (words, count, "step");
    if (!report->step)
        report->step = "";
    const char *node = s_value (words, count, "node");
    const char *restart = s_value (words, count, "restart");
    if (!report->pids ||
        s_int (s_value (words, count, "rank"), &report->rank) ||
        s_int (s_value (words, count, "pgid"), &report->pgid) ||
        s_int (s_value (words, count, "first"), &report->first) ||
        s_int (s_value (words, count, "count"), &report->count) ||
        (node && s_int (node, &report->node)) ||
        (restart && s_int (restart, &report->restart)))
        return -1;
    return 0;
}
