/* Small text helpers shared by the option and case-file checks (text.h). */
#include <ctype.h>
#include <string.h>

#include "text.h"

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
