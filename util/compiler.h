/* Compiler helpers shared by every layer. */
#ifndef STU_COMPILER_H
#define STU_COMPILER_H

#include <stddef.h>

#define STU_LIKELY(x)   __builtin_expect(!!(x), 1)
#define STU_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define STU_NOINLINE    __attribute__((noinline))
#define STU_EXPORT      __attribute__((visibility("default")))
#define STU_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define STU_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define STU_MIN(a, b)   ((a) < (b) ? (a) : (b))
#define STU_MAX(a, b)   ((a) > (b) ? (a) : (b))

/* The enclosing object of a member pointer (objects embed their base first). */
#define stu_container_of(ptr, type, member) \
    ((type *)((char *)(ptr) - offsetof(type, member)))

#endif /* STU_COMPILER_H */
