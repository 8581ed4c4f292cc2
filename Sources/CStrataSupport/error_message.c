// The XSI strerror_r (an int result) on every platform: ask for POSIX 2008 and no GNU extensions.
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include "CStrataSupport.h"

int strata_error_message(int code, char *buffer, size_t size) {
    return strerror_r(code, buffer, size);
}
