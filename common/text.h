/* Small text helpers shared by the option and case-file checks. */
#ifndef HOOKE_COMMON_TEXT_H
#define HOOKE_COMMON_TEXT_H

/* Edit distance of a and b for "did you mean" hints: insertions, deletions, substitutions and
 * swaps of two neighbours (optimal string alignment), case-insensitive; words longer than 63
 * characters count as far apart (99). */
int hk_edit_distance(const char *a, const char *b);

#endif
