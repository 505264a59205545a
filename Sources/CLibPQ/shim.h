#ifndef CLIBPQ_SHIM_H
#define CLIBPQ_SHIM_H

#include <libpq-fe.h>

// SQLSTATE codes come back through PQresultErrorField with this field code, a char macro Swift cannot import.

/// The field code of a result's five-character SQLSTATE.
static inline int CLibPQ_PG_DIAG_SQLSTATE(void) { return PG_DIAG_SQLSTATE; }

#endif
