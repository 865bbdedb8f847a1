/* Small text helpers shared by the option and case-file checks (text.h). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "hooke/error.h"
#include "text.h"

int hk_env_switch(const char *name, const char *on_word, const char *on_means, const char *off_word,
                  const char *off_means, int dflt, int *on)
{
    const char *v = getenv(name);
    *on = dflt;
    if (!v || !*v) return 0;
    if (!strcmp(v, on_word) || !strcmp(v, off_word)) {
        *on = !strcmp(v, on_word);
        return 0;
    }
    return hk_error_set(HK_ERR_ARG, __FILE__, __LINE__,
                        "%s=%s: set it to %s (%s) or %s (%s), or unset it", name, v, on_word,
                        on_means, off_word, off_means);
}

int hk_edit_distance(const char *a, const char *b)
{
    const int na = (int)strlen(a), nb = (int)strlen(b);
    if (na > 63 || nb > 63) return 99;
    int d[64][64];
    for (int i = 0; i <= na; i++)
        d[i][0] = i;
    for (int j = 0; j <= nb; j++)
        d[0][j] = j;
    for (int i = 1; i <= na; i++)
        for (int j = 1; j <= nb; j++) {
            const int ai = tolower((unsigned char)a[i - 1]), bj = tolower((unsigned char)b[j - 1]);
            int v = d[i - 1][j - 1] + (ai != bj);
            if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ai == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == bj && d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[na][nb];
}
