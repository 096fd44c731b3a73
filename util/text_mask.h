/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Text from a database or a file for a terminal or a text table
 * (header-only): s copied into out with every control character (below
 * 0x20, and 0x7f) replaced by '?', so a stored name cannot move the
 * cursor, retitle the window or break a row. Truncates to len - 1 bytes
 * (NULL s: ""); returns out ("" when out is NULL or len 0). Used by
 * approf list, approf hardware and apreport's comparison (the name kept
 * from costdb, where it lived).
 */
#ifndef UTIL_TEXT_MASK_H
#define UTIL_TEXT_MASK_H

#include <stddef.h>

static inline const char *costdb_text_mask(const char *s, char *out, size_t len)
{
    size_t i = 0;
    if (!out || len == 0)
        return "";
    for (; s && *s && i + 1 < len; s++)
        out[i++] = (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s;
    out[i] = '\0';
    return out;
}

#endif
