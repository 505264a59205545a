#ifndef CZLIB_SHIM_H
#define CZLIB_SHIM_H

// zlib's deflate, for the PNG that `tablecast load --report report.png` writes.
#include <zlib.h>

#endif
