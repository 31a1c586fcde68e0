/*
 * main.c: the memtally command line: a table of subcommands, one file
 * each (cmd_*.c).
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const struct mtl_command commands[] = {
    { "record", cmd_record, "run a program and record its allocations" },
    { "info", cmd_info, "summarise a trace" },
    { "report", cmd_report, "who allocates, how often, how much (per thread and total)" },
    { "peak", cmd_peak, "what was live at the peak, by site" },
    { "leaks", cmd_leaks, "what was live at the end, by site" },
    { "heap", cmd_heap, "a running process's live heap, now" },
    { "attach", cmd_attach, "record a running process from now on" },
    { "temporary", cmd_temporary, "blocks freed right after their allocation, by site" },
    { "stacks", cmd_stacks, "the most frequent call stacks that reach a function" },
    { "types", cmd_types, "objects and bytes by type tag: allocated, live, at the peak" },
    { "tree", cmd_tree, "the call tree of allocations, top down or bottom up" },
    { "export", cmd_export, "results for other tools: pprof, flame graphs, massif, DHAT, SQLite..." },
    { "timeline", cmd_timeline, "live bytes, allocation rate and RSS over time" },
    { "view", cmd_view, "explore a trace in a web browser (flame graph, filters, lifetimes)" },
    { "histogram", cmd_histogram, "allocation sizes" },
    { "diff", cmd_diff, "what changed between two traces, by function" },
    { "merge", cmd_merge, "several traces as one: runs of a program, or a process tree" },
    { "dump", cmd_dump, "print every event of a trace as text" },
    { "index", cmd_index, "build a trace's index ahead of the analyses, and show it" },
    { "ctl", cmd_ctl, "steer a recording process: start, pause, dump, stop, status" },
    { "top", cmd_top, "watch a recording process live: rates and top allocators" },
};

static void usage(FILE *f)
{
    fprintf(f, "usage: memtally COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n`memtally COMMAND --help` tells more; docs/ANALYSIS.md has it all.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("memtally 0.1\n");
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    cli_error("unknown command '%s' (see memtally --help)", argv[1]);
    return 2;
}
