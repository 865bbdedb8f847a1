/* Small text helpers shared by the option and case-file checks, and the measurement switches
 * read from the environment. */
#ifndef HOOKE_COMMON_TEXT_H
#define HOOKE_COMMON_TEXT_H

/* Edit distance of a and b for "did you mean" hints: insertions, deletions, substitutions and
 * swaps of two neighbours (optimal string alignment), case-insensitive; words longer than 63
 * characters count as far apart (99). */
int hk_edit_distance(const char *a, const char *b);

/* A two-way switch from the environment (the HOOKE_* measurement switches): variable name set
 * to on_word gives *on = 1, to off_word 0, unset or empty dflt; any other value is refused
 * (HK_ERR_ARG) with "NAME=value: set it to on_word (on_means) or off_word (off_means), or
 * unset it". */
int hk_env_switch(const char *name, const char *on_word, const char *on_means, const char *off_word,
                  const char *off_means, int dflt, int *on);

#endif
