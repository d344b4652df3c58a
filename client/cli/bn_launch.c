/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_launch: what the launchers share: finding one by name, the commands
    they give, shell words and quoting, host lists, spreading engines over
    hosts, the --dry-run listing, and running a short command (ssh kill,
    scancel, squeue) with a time limit.  */
#define _GNU_SOURCE //  pipe2
#include "bn_launch.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const bn_launch_ops_t *s_launchers[] = {
    &bn_launch_local, &bn_launch_ssh, &bn_launch_slurm, &bn_launch_mpiexec};

#define S_LAUNCHERS (sizeof s_launchers / sizeof s_launchers[0])

const bn_launch_ops_t *
bn_launch_find (const char *name)
{
    for (size_t index = 0; name && index < S_LAUNCHERS; index++)
        if (strcmp (s_launchers[index]->name, name) == 0)
            return s_launchers[index];
    return NULL;
}

const char *
bn_launch_names (void)
{
    return "local, ssh, slurm, mpiexec";
}

// ---------------------------------------------------------------------------
//  Commands

bn_launch_cmd_t *
bn_launch_cmd_new (const char *label, bn_launch_info_t info, char **argv)
{
    assert (label);
    assert (argv);
    bn_launch_cmd_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    size_t size = bn_launch_words_size (argv);
    self->argv = calloc (size + 1, sizeof *self->argv);
    self->label = strdup (label);
    self->info = info;
    bool ok = self->argv && self->label;
    for (size_t index = 0; ok && index < size; index++)
        ok = (self->argv[index] = strdup (argv[index])) != NULL;
    if (!ok)
        bn_launch_cmd_destroy (&self);
    return self;
}

void
bn_launch_cmd_destroy (bn_launch_cmd_t **self_p)
{
    assert (self_p);
    bn_launch_cmd_t *self = *self_p;
    if (self) {
        bn_launch_words_free (self->argv);
        free (self->label);
        free (self->file);
        free (self->file_text);
        free (self->script);
        free (self->reports);
        free (self);
        *self_p = NULL;
    }
}

static void
s_cmd_destroy (void **item)
{
    bn_launch_cmd_destroy ((bn_launch_cmd_t **)item);
}

zlistx_t *
bn_launch_cmd_list (void)
{
    zlistx_t *list = zlistx_new ();
    if (list)
        zlistx_set_destructor (list, s_cmd_destroy);
    return list;
}

// ---------------------------------------------------------------------------
//  Shell words

size_t
bn_launch_words_size (char **words)
{
    size_t size = 0;
    while (words && words[size])
        size++;
    return size;
}

void
bn_launch_words_free (char **words)
{
    for (size_t index = 0; words && words[index]; index++)
        free (words[index]);
    free (words);
}

char **
bn_launch_words (const char *text)
{
    assert (text);
    size_t length = strlen (text);
    //  Never more words than characters, never a word longer than text
    char **words = calloc (length / 2 + 2, sizeof *words);
    char *word = malloc (length + 1);
    size_t count = 0;
    bool ok = words && word;
    const char *c = text;
    while (ok) {
        while (*c && isspace ((unsigned char)*c))
            c++;
        if (!*c)
            break;
        size_t size = 0;
        while (ok && *c && !isspace ((unsigned char)*c)) {
            if (*c == '\'') {
                const char *end = strchr (c + 1, '\'');
                if (!end)
                    ok = false;
                else {
                    memcpy (word + size, c + 1, (size_t)(end - c - 1));
                    size += (size_t)(end - c - 1);
                    c = end + 1;
                }
            } else if (*c == '"') {
                c++;
                while (*c && *c != '"') {
                    if (*c == '\\' && c[1] && strchr ("\\\"$`", c[1]))
                        c++;
                    word[size++] = *c++;
                }
                if (*c != '"')
                    ok = false;
                else
                    c++;
            } else if (*c == '\\') {
                if (c[1])
                    c++;
                word[size++] = *c++;
            } else
                word[size++] = *c++;
        }
        if (ok) {
            word[size] = 0;
            ok = (words[count++] = strdup (word)) != NULL;
        }
    }
    free (word);
    if (!ok || count == 0) {
        bn_launch_words_free (words);
        return NULL;
    }
    return words;
}

static bool
s_safe (const char *word)
{
    if (!*word)
        return false;
    for (const char *c = word; *c; c++)
        if (!isalnum ((unsigned char)*c) && !strchr ("_@%+=:,./-", *c))
            return false;
    return true;
}

char *
bn_launch_quote (const char *word)
{
    assert (word);
    if (s_safe (word))
        return strdup (word);
    size_t quotes = 0;
    for (const char *c = word; *c; c++)
        quotes += *c == '\'';
    char *quoted = malloc (strlen (word) + quotes * 3 + 3);
    if (!quoted)
        return NULL;
    char *to = quoted;
    *to++ = '\'';
    for (const char *c = word; *c; c++) {
        if (*c == '\'') {
            memcpy (to, "'\\''", 4);
            to += 4;
        } else
            *to++ = *c;
    }
    *to++ = '\'';
    *to = 0;
    return quoted;
}

// ---------------------------------------------------------------------------
//  Hosts

static void
s_trim (char *text)
{
    char *start = text;
    while (*start && isspace ((unsigned char)*start))
        start++;
    size_t length = strlen (start);
    while (length && isspace ((unsigned char)start[length - 1]))
        length--;
    memmove (text, start, length);
    text[length] = 0;
}

//  Append host to list unless it is empty; -1 with why in error if it
//  cannot be a host name.
static int
s_add_host (zlist_t *list, char *host, const char *where, char *error,
            size_t size)
{
    s_trim (host);
    if (!*host)
        return 0;
    for (const char *c = host; *c; c++)
        if (isspace ((unsigned char)*c) || *c == '\'' || *c == '"' ||
            *c == '\\') {
            snprintf (error, size, "'%s'%s is not a host name", host, where);
            return -1;
        }
    if (*host == '-') {
        snprintf (error, size, "'%s'%s is not a host name", host, where);
        return -1;
    }
    return zlist_append (list, host);
}

zlist_t *
bn_launch_hosts (const char *spec, char *error, size_t size)
{
    assert (spec);
    zlist_t *list = zlist_new ();
    if (!list) {
        snprintf (error, size, "out of memory");
        return NULL;
    }
    zlist_autofree (list);
    int rc = 0;
    if (*spec == '@') {
        FILE *file = fopen (spec + 1, "r");
        if (!file) {
            snprintf (error, size, "cannot read the host file %s: %s", spec + 1,
                      strerror (errno));
            zlist_destroy (&list);
            return NULL;
        }
        char line[1024], where[1100];
        int number = 0;
        while (rc == 0 && fgets (line, sizeof line, file)) {
            number++;
            char *hash = strchr (line, '#');
            if (hash)
                *hash = 0;
            snprintf (where, sizeof where, " (%s line %d)", spec + 1, number);
            rc = s_add_host (list, line, where, error, size);
        }
        fclose (file);
    } else {
        char *copy = strdup (spec);
        char *save = NULL;
        for (char *host = copy ? strtok_r (copy, ",", &save) : NULL;
             host && rc == 0; host = strtok_r (NULL, ",", &save))
            rc = s_add_host (list, host, "", error, size);
        if (!copy)
            rc = -1;
        free (copy);
    }
    if (rc == 0 && zlist_size (list) == 0) {
        snprintf (error, size, "no hosts in '%s'", spec);
        rc = -1;
    }
    if (rc != 0)
        zlist_destroy (&list);
    return list;
}

//  --min-hosts cannot ask for more hosts than the engines go to.
static int
s_check_min_hosts (bn_launch_plan_t *plan, char *error, size_t size)
{
    if (plan->min_hosts <= plan->nhosts)
        return 0;
    snprintf (error, size,
              "--min-hosts %d is more than the %d host%s the engines go to",
              plan->min_hosts, plan->nhosts, plan->nhosts == 1 ? "" : "s");
    return -1;
}

char *
bn_launch_host_list (const bn_launch_plan_t *plan, int count)
{
    assert (plan && plan->hosts);
    size_t length = 1;
    for (char *host = zlist_first (plan->hosts); host;
         host = zlist_next (plan->hosts))
        length += strlen (host) + 1;
    char *list = calloc (1, length);
    int taken = 0;
    for (char *host = zlist_first (plan->hosts); list && host && taken < count;
         host = zlist_next (plan->hosts), taken++) {
        if (taken)
            strcat (list, ",");
        strcat (list, host);
    }
    return list;
}

int
bn_launch_spread (bn_launch_plan_t *plan, int hosts, char *error, size_t size)
{
    assert (plan);
    if (hosts <= 0 && plan->hosts)
        hosts = (int)zlist_size (plan->hosts);
    int n = plan->n;
    int per_host = plan->per_host;
    if (n == 0) {
        plan->nhosts = 0;
        plan->engines_per_host = per_host;
        return 0;
    }
    if (per_host > 0) {
        int needed = (n + per_host - 1) / per_host;
        if (hosts > 0 && needed > hosts) {
            snprintf (error, size,
                      "-n %d at %d engines a host needs %d hosts, and there "
                      "%s only %d",
                      n, per_host, needed, hosts == 1 ? "is" : "are", hosts);
            return -1;
        }
        plan->nhosts = needed;
        plan->engines_per_host = per_host;
        return s_check_min_hosts (plan, error, size);
    }
    if (hosts <= 0) {
        snprintf (error, size,
                  "say where the engines go: --hosts H1,H2,... or "
                  "--engines-per-host K");
        return -1;
    }
    plan->engines_per_host = (n + hosts - 1) / hosts;
    plan->nhosts = (n + plan->engines_per_host - 1) / plan->engines_per_host;
    return s_check_min_hosts (plan, error, size);
}

int
bn_launch_check_remote (bn_launch_plan_t *plan, const char *launcher,
                        char *error, size_t size)
{
    assert (plan && launcher);
    struct {
        const char *option;
        const char *value;
        const char *launcher;
        bool command;
    } own[] = {{"--ssh-cmd", plan->ssh_cmd, "ssh", true},
               {"--mpiexec-cmd", plan->mpiexec_cmd, "mpiexec", true},
               {"--batch-template", plan->batch_template, "slurm", false}};
    for (size_t index = 0; index < sizeof own / sizeof own[0]; index++) {
        if (!own[index].value)
            continue;
        if (strcmp (own[index].launcher, launcher) != 0) {
            snprintf (error, size, "%s is not for the %s launcher",
                      own[index].option, launcher);
            return -1;
        }
        char **words =
            own[index].command ? bn_launch_words (own[index].value) : NULL;
        bn_launch_words_free (words);
        if (own[index].command && !words) {
            snprintf (error, size, "%s '%s' is not a command",
                      own[index].option, own[index].value);
            return -1;
        }
    }
    if (plan->engine_cmd && strchr (plan->engine_cmd, '\'')) {
        snprintf (error, size,
                  "--engine-cmd: write it without single quotes (the host "
                  "script is single-quoted)");
        return -1;
    }
    if (plan->remote_prefix && strchr (plan->remote_prefix, '\'')) {
        snprintf (error, size, "--remote-prefix: no single quotes, please");
        return -1;
    }
    if (plan->engine_cmd && plan->per_process > 1) {
        snprintf (error, size,
                  "--engine-cmd starts one stock engine a process: "
                  "--engines-per-process does not apply");
        return -1;
    }
    return 0;
}

// ---------------------------------------------------------------------------
//  --dry-run

static void
s_print_word (FILE *out, const char *word)
{
    char *quoted = bn_launch_quote (word);
    fputs (quoted ? quoted : word, out);
    free (quoted);
}

//  text in double quotes, as sh reads it back.
static void
s_print_dquoted (FILE *out, const char *text, size_t length)
{
    for (size_t index = 0; index < length; index++) {
        if (strchr ("\\\"$`", text[index]))
            fputc ('\\', out);
        fputc (text[index], out);
    }
}

//  argv as a command line; a word holding script shows it as $script.
static void
s_print_argv (FILE *out, char **argv, const char *script)
{
    for (size_t index = 0; argv[index]; index++) {
        if (index)
            fputc (' ', out);
        const char *at = script ? strstr (argv[index], script) : NULL;
        if (at) {
            const char *word = argv[index];
            fputc ('"', out);
            s_print_dquoted (out, word, (size_t)(at - word));
            fputs ("$script", out);
            const char *rest = at + strlen (script);
            s_print_dquoted (out, rest, strlen (rest));
            fputc ('"', out);
        } else
            s_print_word (out, argv[index]);
    }
    fputc ('\n', out);
}

int
bn_launch_print (const bn_launch_ops_t *ops, const bn_launch_plan_t *plan,
                 char **controller_argv, FILE *out)
{
    assert (ops && plan && controller_argv && out);
    zlistx_t *commands = ops->commands (plan);
    if (!commands)
        return -1;
    fprintf (out,
             "#!/bin/sh\n"
             "# banyan cluster start --launcher %s --dry-run: what would run "
             "(nothing was).\n"
             "# The controller, on this host:\n",
             ops->name);
    s_print_argv (out, controller_argv, NULL);
    //  Every host runs the same script
    bn_launch_cmd_t *first = zlistx_first (commands);
    const char *script = first ? first->script : NULL;
    if (script) {
        //  A batch file holds the script itself: no need to show it twice
        bool word = false;
        for (bn_launch_cmd_t *command = first; command && !word;
             command = zlistx_next (commands))
            for (size_t index = 0; command->argv[index] && !word; index++)
                word = strstr (command->argv[index], script) != NULL;
        fprintf (out,
                 "# The host script%s, which each host runs with sh -c, "
                 "takes\n"
                 "# BANYAN_CONNECTION_INFO (the controller's "
                 "ipcontroller-engine.json on one\n"
                 "# line) from %s.\n",
                 word ? "" : " (in the batch file)",
                 first->info == BN_LAUNCH_INFO_STDIN
                     ? "the first line of its standard input"
                     : "its environment");
        if (word)
            fprintf (out, "script='%s'\n", script);
    }
    if (plan->n > 0 && ops->remote)
        fprintf (out, "# %d engine%s, %d a host, on %d host%s:\n", plan->n,
                 plan->n == 1 ? "" : "s", plan->engines_per_host, plan->nhosts,
                 plan->nhosts == 1 ? "" : "s");
    else if (plan->n > 0)
        fprintf (out, "# %d engine%s:\n", plan->n, plan->n == 1 ? "" : "s");
    for (bn_launch_cmd_t *command = zlistx_first (commands); command;
         command = zlistx_next (commands)) {
        if (command->file) {
            fputs ("cat > ", out);
            s_print_word (out, command->file);
            fprintf (out, " <<'EOF'\n%sEOF\n", command->file_text);
        }
        s_print_argv (out, command->argv, script);
    }
    zlistx_destroy (&commands);
    return 0;
}

// ---------------------------------------------------------------------------
//  Short commands

int
bn_launch_run (char **argv, double timeout, char *output, size_t size,
               FILE *log)
{
    assert (argv && argv[0]);
    int fds[2];
    if (pipe2 (fds, O_CLOEXEC) != 0)
        return -1;
    if (log)
        fflush (log);
    pid_t pid = fork ();
    if (pid < 0) {
        close (fds[0]);
        close (fds[1]);
        return -1;
    }
    if (pid == 0) {
        sigset_t none;
        sigemptyset (&none);
        sigprocmask (SIG_SETMASK, &none, NULL);
        signal (SIGPIPE, SIG_DFL);
        int null = open ("/dev/null", O_RDWR);
        dup2 (null, STDIN_FILENO);
        dup2 (fds[1], STDOUT_FILENO);
        dup2 (log ? fileno (log) : null, STDERR_FILENO);
        execvp (argv[0], argv);
        fprintf (stderr, "cannot run %s: %s\n", argv[0], strerror (errno));
        _exit (127);
    }
    close (fds[1]);
    size_t used = 0;
    if (output && size)
        output[0] = 0;
    int64_t deadline = zclock_mono () + (int64_t)(timeout * 1000);
    bool eof = false, reaped = false, timed_out = false;
    int status = -1;
    while (!(eof && reaped)) {
        int64_t left = deadline - zclock_mono ();
        if (left <= 0) {
            if (!reaped) {
                kill (pid, SIGKILL);
                waitpid (pid, &status, 0);
                timed_out = true;
            }
            break; //  Or a child of it holds the pipe: what we have is all
        }
        if (!eof) {
            struct pollfd item = {fds[0], POLLIN, 0};
            if (poll (&item, 1, left < 50 ? (int)left : 50) > 0) {
                char buffer[1024];
                ssize_t got = read (fds[0], buffer, sizeof buffer);
                if (got <= 0)
                    eof = got == 0 || errno != EINTR;
                else if (output && used + 1 < size) {
                    size_t take = (size_t)got < size - 1 - used
                                      ? (size_t)got
                                      : size - 1 - used;
                    memcpy (output + used, buffer, take);
                    used += take;
                    output[used] = 0;
                }
            }
        } else
            zclock_sleep (left < 20 ? (int)left : 20);
        if (!reaped && waitpid (pid, &status, WNOHANG) == pid) {
            reaped = true;
            int64_t drain = zclock_mono () + 200;
            if (drain < deadline)
                deadline = drain;
        }
    }
    close (fds[0]);
    return timed_out ? -1 : status;
}
