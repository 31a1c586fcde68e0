/*
 * wordfreq.c: the example program `make demo` records.  Two threads count
 * the words of a generated text in hash tables of their own (strdup'd
 * keys, tables that grow with realloc, a line buffer per line), then the
 * main thread merges and prints the five most frequent words.  It keeps
 * one list on purpose when it exits, so that a trace has something live at
 * the end.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
    char *word;
    unsigned count;
};

struct table {
    struct entry *slot;
    size_t cap, used;
};

static size_t hash_word(const char *s)
{
    size_t h = 5381;
    while (*s)
        h = h * 33 + (unsigned char)*s++;
    return h;
}

static void add(struct table *t, const char *word, unsigned n)
{
    if ((t->used + 1) * 2 > t->cap) {
        struct table g = { calloc(t->cap ? t->cap * 2 : 64, sizeof *g.slot),
                           t->cap ? t->cap * 2 : 64, 0 };
        for (size_t i = 0; i < t->cap; i++)
            if (t->slot[i].word) {
                size_t j = hash_word(t->slot[i].word) & (g.cap - 1);
                while (g.slot[j].word)
                    j = (j + 1) & (g.cap - 1);
                g.slot[j] = t->slot[i];
                g.used++;
            }
        free(t->slot);
        *t = g;
    }
    size_t i = hash_word(word) & (t->cap - 1);
    while (t->slot[i].word && strcmp(t->slot[i].word, word) != 0)
        i = (i + 1) & (t->cap - 1);
    if (!t->slot[i].word) {
        t->slot[i].word = strdup(word);
        t->used++;
    }
    t->slot[i].count += n;
}

static const char *const syllables[] = { "ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi" };

/* A deterministic line of words from a seed. */
static char *make_line(unsigned *seed)
{
    size_t cap = 16, len = 0;
    char *line = malloc(cap);
    int words = 4 + (int)(*seed % 8);
    for (int w = 0; w < words; w++) {
        int syl = 1 + (int)((*seed >> 3) % 3);
        for (int s = 0; s < syl; s++) {
            *seed = *seed * 1103515245u + 12345u;
            const char *p = syllables[(*seed >> 16) % 8];
            if (len + 4 > cap)
                line = realloc(line, cap *= 2);
            memcpy(line + len, p, 2);
            len += 2;
        }
        line[len++] = ' ';
    }
    line[len] = '\0';
    return line;
}

struct job {
    unsigned seed;
    int lines;
    struct table counts;
};

static void *count_words(void *arg)
{
    struct job *job = arg;
    for (int l = 0; l < job->lines; l++) {
        char *line = make_line(&job->seed);
        for (char *save, *w = strtok_r(line, " ", &save); w;
             w = strtok_r(NULL, " ", &save))
            add(&job->counts, w, 1);
        free(line);
    }
    return NULL;
}

static int by_count(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    return x->count != y->count ? (x->count < y->count) - (x->count > y->count)
                                : strcmp(x->word, y->word);
}

int main(void)
{
    struct job jobs[2] = { { 1, 20000, {0} }, { 2, 20000, {0} } };
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, count_words, &jobs[i]);
    struct table all = {0};
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        for (size_t s = 0; s < jobs[i].counts.cap; s++) {
            struct entry *e = &jobs[i].counts.slot[s];
            if (e->word) {
                add(&all, e->word, e->count);
                free(e->word);
            }
        }
        free(jobs[i].counts.slot);
    }
    struct entry *list = malloc(all.used * sizeof *list);
    size_t n = 0;
    for (size_t s = 0; s < all.cap; s++)
        if (all.slot[s].word)
            list[n++] = all.slot[s];
    qsort(list, n, sizeof *list, by_count);
    printf("%zu distinct words; the most frequent:\n", n);
    for (size_t i = 0; i < 5 && i < n; i++)
        printf("  %-10s %u\n", list[i].word, list[i].count);
    for (size_t s = 0; s < all.cap; s++)
        free(all.slot[s].word);
    free(all.slot);
    return 0; /* list is left live on purpose */
}
