#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The benchmarks' one clock: seconds on `CLOCK_MONOTONIC`, read with `clock_gettime`.
///
/// Every figure the benchmarks print, PersistenceKit's and SQLite's, is the difference of two
/// readings of this function, taken at the same places on both sides.
@inline(__always)
public func now() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

/// The seconds `body` takes, on the clock of ``now()``.
@inline(__always)
public func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = now()
    try body()
    return now() - start
}
