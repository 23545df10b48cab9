// SQLite's C API for the benchmark baselines (the system's libsqlite3).
#include <sqlite3.h>
