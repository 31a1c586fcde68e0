/* procstat.c: see procstat.h. */
#include "common/procstat.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int mtl_proc_stat(pid_t pid, uint64_t f[MTL_STAT_FIELDS + 1])
{
    char path[64], buf[4096];
    if (pid)
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    else
        snprintf(path, sizeof path, "/proc/self/stat");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    /* The command name (field 2) may hold spaces and parentheses. */
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    p++;
    memset(f, 0, (MTL_STAT_FIELDS + 1) * sizeof *f);
    f[1] = (uint64_t)(pid ? pid : getpid());
    for (int k = 3; k <= MTL_STAT_FIELDS && *p && *p != '\n'; k++) {
        while (*p == ' ')
            p++;
        if (k == 3) { /* the state, a letter */
            f[3] = (unsigned char)*p;
            while (*p && *p != ' ')
                p++;
            continue;
        }
        char *end;
        f[k] = strtoull(p, &end, 10);
        if (end == p)
            return -1;
        p = end;
    }
    return 0;
}
