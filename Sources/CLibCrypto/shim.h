// OpenSSL's libcrypto (Debian's libssl-dev, which libwebsockets-dev already brings for its TLS): only its
// SHA-256, for naming a token's principal without storing the token.
#ifndef CLIBCRYPTO_SHIM_H
#define CLIBCRYPTO_SHIM_H

#include <openssl/sha.h>

#endif
