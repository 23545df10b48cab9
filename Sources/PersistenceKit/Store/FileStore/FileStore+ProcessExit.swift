#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// A store still open when the process exits normally (`exit`, or returning from `main`) is
// closed by an exit handler, as its deinit would have closed it: its file ends with the
// close record and `-lock` goes, so the next open is a clean one. Core Data asks no
// "remove every store before exiting" of its users, and neither do we: a container kept in
// a global, or one that lives for the whole program, is never released, so without this
// every run of such a program left a file that the next open had to recover as after a
// crash. A crash or `_exit` skips the handler and the next open recovers as before.

extension FileStore {
    /// Registers the exit handler, once per process; evaluated by every open.
    static let closesOpenStoresAtExit: Void = {
        atexit { FileStore.closeOpenStores() }
    }()

    /// Closes every store open in this process (the exit handler). A store in the middle of
    /// a save on another thread closes after it: `close()` waits for the store's lock.
    /// Errors are dropped, as in `deinit`: a store whose close fails recovers on its next open.
    static func closeOpenStores() {
        // Retained under the table's lock, closed after it: `close()` takes the lock again.
        let stores = openStores.withLock { table in table.values.compactMap(\.store) }
        for store in stores { try? store.close() }
    }
}
