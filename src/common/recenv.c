/* recenv.c: see recenv.h (making a block; reading one is inline there). */
#include "common/recenv.h"

/* Appends "name=value" (value a string, or num when NULL) at *at, before
 * end; the entry, or NULL when there is no room. */
static char *put(char **at, char *end, const char *name, const char *value,
                 unsigned long long num)
{
    char digits[24], *d = digits + sizeof digits;
    if (!value) {
        *--d = '\0';
        do
            *--d = (char)('0' + num % 10);
        while ((num /= 10) != 0);
        value = d;
    }
    size_t nn = strlen(name), nv = strlen(value);
    if ((size_t)(end - *at) < nn + nv + 2)
        return NULL;
    char *e = *at;
    memcpy(e, name, nn);
    e[nn] = '=';
    memcpy(e + nn + 1, value, nv + 1);
    *at += nn + nv + 2;
    return e;
}

size_t mtl_env_block_make(const struct mtl_env_opts *o, char *buf, size_t cap,
                          char *entries[MTL_ENV_MAX_BLOCK])
{
    char *at = buf, *end = buf + cap;
    size_t k = 1; /* the marker, made last, when the block is counted */
    if (o->output) {
        entries[k++] = put(&at, end, MTL_ENV_OUTPUT, o->output, 0);
        entries[k++] = put(&at, end, MTL_ENV_OUTPUT_PID, NULL, (unsigned long long)o->output_pid);
    }
    entries[k++] = put(&at, end, MTL_ENV_PATTERN, o->pattern, 0);
    entries[k++] = put(&at, end, MTL_ENV_DEPTH, NULL, o->depth);
    if (o->sample_rate)
        entries[k++] = put(&at, end, MTL_ENV_SAMPLE_RATE, NULL, o->sample_rate);
    if (o->seed)
        entries[k++] = put(&at, end, MTL_ENV_SEED, NULL, o->seed);
    if (o->time_resolution_us > 1)
        entries[k++] = put(&at, end, MTL_ENV_TIME_RESOLUTION, NULL, o->time_resolution_us);
    if (o->idle)
        entries[k++] = put(&at, end, MTL_ENV_IDLE, "1", 0);
    if (o->follow_fork)
        entries[k++] = put(&at, end, MTL_ENV_FOLLOW_FORK, "1", 0);
    if (o->follow_exec)
        entries[k++] = put(&at, end, MTL_ENV_FOLLOW_EXEC, "1", 0);
    if (o->region_fd >= 0)
        entries[k++] = put(&at, end, MTL_ENV_REGION, NULL, (unsigned long long)o->region_fd);
    if (o->handover && *o->handover)
        entries[k++] = put(&at, end, MTL_ENV_HANDOVER, o->handover, 0);
    if (o->calls)
        entries[k++] = put(&at, end, MTL_ENV_CALLS, o->calls, 0);
    /* Last: ld.so takes the last LD_PRELOAD; the user's stays in place. */
    char *pre = put(&at, end, MTL_ENV_PRELOAD, o->library, 0);
    if (pre && o->their_preload && *o->their_preload) {
        size_t n = strlen(o->their_preload);
        if ((size_t)(end - at) < n + 1)
            pre = NULL;
        else {
            at[-1] = ':'; /* over the NUL that ended ours */
            memcpy(at, o->their_preload, n + 1);
            at += n + 1;
        }
    }
    entries[k++] = pre;
    entries[0] = put(&at, end, MTL_ENV_MARKER, NULL, k);
    for (size_t i = 0; i < k; i++)
        if (!entries[i])
            return 0;
    return k;
}
