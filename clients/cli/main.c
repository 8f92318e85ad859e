/*
 * main.c — sbx, the sandboxd command line: argument parsing, --help, and dispatch.
 *
 * Global options (--url, --token, -s) may come before or after the command word; command
 * options follow the command. For `exec`, parsing stops at the first word of the command
 * so `sbx exec ls -la` passes "-la" to ls. Environment: SANDBOXD_URL, SANDBOXD_TOKEN.
 * Nothing here talks to the network: the commands do, through one sbx_client.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "sbx.h"

#define DEFAULT_URL "http://127.0.0.1:7878"

static const char k_usage[] =
"usage: sbx [--url URL] [--token TOKEN] [-s SANDBOX] COMMAND [OPTIONS] [ARGS]\n"
"\n"
"Talk to a sandboxd daemon (code interpreter sandboxes).\n"
"\n"
"Commands:\n"
"  run [OPTIONS] (CODE | -f FILE | -)   run code, streaming its output live\n"
"  repl [-l LANG] [-e K=V]              interactive prompt on a fresh code context\n"
"  exec [--cwd DIR] [-e K=V] [-i] CMD…  run a shell command; exits with its exit code\n"
"  ls                                   list sandboxes\n"
"  contexts                             list the code contexts of the sandbox (-s)\n"
"  rm SANDBOX…                          delete sandboxes (processes end, files go)\n"
"  cp LOCAL SANDBOX:PATH                upload a file ('-' reads stdin)\n"
"  cp SANDBOX:PATH LOCAL                download a file ('-' writes stdout)\n"
"  mcp                                  serve MCP over stdio (for agents), forwarded to /mcp\n"
"\n"
"Global options:\n"
"  --url URL           daemon address (default $SANDBOXD_URL, else " DEFAULT_URL ")\n"
"  --token TOKEN       bearer token (default $SANDBOXD_TOKEN)\n"
"  -s, --sandbox ID    sandbox to use, created if missing (default: default)\n"
"  --json              ls/contexts: print the daemon's JSON\n"
"  -h, --help          this help\n"
"  -V, --version       print the version\n"
"\n"
"run / repl options:\n"
"  -l, --language L    python (default), javascript or typescript\n"
"  -c, --context ID    run in this code context (default: the sandbox's default one)\n"
"  -e, --env K=V       environment variable for this run (repeatable, up to 64)\n"
"  --timeout MS        server-enforced time limit in milliseconds (0 = none)\n"
"  -f, --file FILE     read the code from FILE ('-' or a lone '-' argument: stdin)\n"
"  --save DIR          write image results (png, jpeg, svg, pdf) to DIR/result-N.EXT\n"
"\n"
"exec options:\n"
"  --cwd DIR           working directory inside the sandbox (default /workspace)\n"
"  -e, --env K=V       environment variable (repeatable)\n"
"  --timeout MS        time limit in milliseconds\n"
"  -i, --stdin         send this program's stdin to the command\n"
"\n"
"Exit status: 0 ok; 1 the code raised (run); 2 usage error; 3 daemon error or\n"
"unreachable; exec: the command's exit status.\n";

enum { OPT_URL = 256, OPT_TOKEN, OPT_TIMEOUT, OPT_SAVE, OPT_CWD, OPT_JSON };

static const struct option k_options[] = {
    { "url", required_argument, NULL, OPT_URL },
    { "token", required_argument, NULL, OPT_TOKEN },
    { "sandbox", required_argument, NULL, 's' },
    { "language", required_argument, NULL, 'l' },
    { "context", required_argument, NULL, 'c' },
    { "env", required_argument, NULL, 'e' },
    { "file", required_argument, NULL, 'f' },
    { "timeout", required_argument, NULL, OPT_TIMEOUT },
    { "save", required_argument, NULL, OPT_SAVE },
    { "cwd", required_argument, NULL, OPT_CWD },
    { "stdin", no_argument, NULL, 'i' },
    { "json", no_argument, NULL, OPT_JSON },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 },
};

static const struct { const char *name; int (*fn)(sbx_client *, const sbx_args *); } k_cmds[] = {
    { "run", cmd_run },
    { "repl", cmd_repl },
    { "exec", cmd_exec },
    { "ls", cmd_ls },
    { "contexts", cmd_contexts },
    { "rm", cmd_rm },
    { "cp", cmd_cp },
    { "mcp", cmd_mcp },
};

/* A decimal number in [0, LLONG_MAX] (no atoi: garbage is an error, not 0). */
static int parse_ms(const char *s, long long *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < 0)
        return -EINVAL;
    *out = v;
    return 0;
}

/* One getopt pass over argv; '+' mode stops at the first positional. 0, 1 (exit 0 after
 * help/version) or SBX_EXIT_USAGE. */
static int parse_pass(int argc, char **argv, sbx_args *a, bool stop_at_word)
{
    optind = 0;   /* glibc: full re-initialisation */
    opterr = 1;
    int ch;
    const char *shorts = stop_at_word ? "+s:l:c:e:f:ihV" : "s:l:c:e:f:ihV";
    while ((ch = getopt_long(argc, argv, shorts, k_options, NULL)) != -1) {
        switch (ch) {
        case OPT_URL: a->url = optarg; break;
        case OPT_TOKEN: a->token = optarg; break;
        case 's': a->sandbox = optarg; break;
        case 'l': a->language = optarg; break;
        case 'c': a->context = optarg; break;
        case 'f': a->file = optarg; break;
        case 'i': a->stdin_in = true; break;
        case OPT_SAVE: a->save = optarg; break;
        case OPT_CWD: a->cwd = optarg; break;
        case OPT_JSON: a->json = true; break;
        case 'e':
            if (a->nenv >= SBX_MAX_ENV) {
                fprintf(stderr, "sbx: at most %d -e options\n", SBX_MAX_ENV);
                return SBX_EXIT_USAGE;
            }
            a->env[a->nenv++] = optarg;
            break;
        case OPT_TIMEOUT:
            if (parse_ms(optarg, &a->timeout_ms) != 0) {
                fprintf(stderr, "sbx: --timeout wants milliseconds, got '%s'\n", optarg);
                return SBX_EXIT_USAGE;
            }
            break;
        case 'h': fputs(k_usage, stdout); return 1;
        case 'V': printf("sbx %s (libcurl %s)\n", SANDBOXD_VERSION, curl_version_info(CURLVERSION_NOW)->version); return 1;
        default:
            fputs("Try 'sbx --help'.\n", stderr);
            return SBX_EXIT_USAGE;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    sbx_args a = { .timeout_ms = -1 };
    int rc = parse_pass(argc, argv, &a, true);
    if (rc)
        return rc == 1 ? 0 : rc;
    if (optind >= argc) {
        fputs(k_usage, stderr);
        return SBX_EXIT_USAGE;
    }
    a.cmd = argv[optind];
    int (*fn)(sbx_client *, const sbx_args *) = NULL;
    for (size_t i = 0; i < sizeof(k_cmds) / sizeof(k_cmds[0]); i++)
        if (strcmp(k_cmds[i].name, a.cmd) == 0)
            fn = k_cmds[i].fn;
    if (!fn) {
        fprintf(stderr, "sbx: unknown command '%s'. Try 'sbx --help'.\n", a.cmd);
        return SBX_EXIT_USAGE;
    }
    /* Command options: argv from the command word on (getopt skips argv[0]). */
    int sub_argc = argc - optind;
    char **sub_argv = argv + optind;
    rc = parse_pass(sub_argc, sub_argv, &a, strcmp(a.cmd, "exec") == 0);
    if (rc)
        return rc == 1 ? 0 : rc;
    a.argc = sub_argc - optind;
    a.argv = sub_argv + optind;

    if (!a.url)
        a.url = getenv("SANDBOXD_URL");
    if (!a.url || !*a.url)
        a.url = DEFAULT_URL;
    if (!a.token)
        a.token = getenv("SANDBOXD_TOKEN");
    if (!a.sandbox)
        a.sandbox = "default";

    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "sbx: libcurl failed to initialise\n");
        return SBX_EXIT_API;
    }
    sbx_client c;
    if (cl_init(&c, a.url, a.token) != 0) {
        fprintf(stderr, "sbx: out of memory\n");
        curl_global_cleanup();
        return SBX_EXIT_API;
    }
    rc = fn(&c, &a);
    cl_free(&c);
    curl_global_cleanup();
    return rc;
}
