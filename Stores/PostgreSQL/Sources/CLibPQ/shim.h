// libpq's client API. pkg-config (libpq) adds its include folder: /usr/include/postgresql
// on Debian and Ubuntu, Homebrew's libpq/include on macOS.
#include <libpq-fe.h>
