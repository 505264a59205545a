#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H

#include <sqlite3.h>

// SQLITE_TRANSIENT and SQLITE_STATIC are casts of integers to function pointers, which Swift cannot import.

/// Tells sqlite3_bind_* to copy the bytes before the call returns.
static inline sqlite3_destructor_type CSQLite_SQLITE_TRANSIENT(void) { return SQLITE_TRANSIENT; }

/// Tells sqlite3_bind_* that the bytes outlive the statement's use of them.
static inline sqlite3_destructor_type CSQLite_SQLITE_STATIC(void) { return SQLITE_STATIC; }

#endif
