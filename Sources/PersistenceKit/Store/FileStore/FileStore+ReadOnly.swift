import Foundation

// Opening a store read-only (`Options.readOnly`, Core Data's NSReadOnlyPersistentStoreOption):
// the file is opened for reading only and read into memory, and nothing is written, the
// `-lock` sidecar included. So a store in a folder the process cannot write opens, and
// several processes may read one store at once.
//
// Without the lock, nothing keeps a writer away, so the open accepts only a store no
// process is writing: a `-lock` beside the file means a process has it open for writing,
// or the last one crashed and the file may end in an unfinished record, which only a
// read-write open may cut. Such a store is refused (`.lockedByAnotherProcess`), as is one
// that does not exist (a read-only open does not create it). The file is verified strictly
// (it must end in its close record). It is read into memory rather than mapped: a writer
// that opened it later could cut the file, and a mapped page past the new end would fault.
extension FileStore {
    static func openFilesReadOnly(path: String, model: NSManagedObjectModel, options: Options) throws(FileStoreError) -> Opened {
        let fs = options.fileSystem
        guard fs.fileExists(path) else {
            throw FileStoreError(
                .io, path: path,
                "there is no store at \(path), and a store opened read-only is not created; open it without "
                    + "NSReadOnlyPersistentStoreOption once to create it, or fix the URL.")
        }
        if fs.fileExists(path + "-lock") {
            throw FileStoreError(
                .lockedByAnotherProcess, path: path,
                "the store is open for writing in another process, or its last session ended without closing it (its "
                    + "-lock file is there); a read-only open reads only a store that was closed cleanly. Close it there, "
                    + "or open it once for writing to recover it.")
        }
        let opened = try io(path, "opening the store for reading") {
            if let posix = fs as? PosixFileSystem { try posix.openForReading(path) } else { try fs.open(path, create: false) }
        }
        let file = ReadOnlyStoreFile(opened)
        do throws(FileStoreError) {
            let size = try io(path, "reading the store") { try file.size() }
            let image = try io(path, "reading the store") { try StoreImage(file: file, size: size) }
            var state = State(file: file, lock: nil, image: image)
            let (storeID, _) = try verify(&state, path: path, model: model, tolerant: false)
            return Opened(storeID: storeID, state: state, recovery: nil)
        } catch {
            file.close()
            throw error
        }
    }

    /// The error of a write to a store opened read-only.
    static func readOnlyError(_ path: String) -> FileStoreError {
        FileStoreError(
            .readOnly, path: path,
            "the store was opened read-only (NSReadOnlyPersistentStoreOption), so nothing was written; open it without "
                + "that option to change it.")
    }
}

/// A store file opened for reading only: reads pass through; writes, syncs and locks throw
/// (no store path reaches them: appends are refused first); it is never mapped (see the
/// comment above).
final class ReadOnlyStoreFile: StoreFile {
    private let file: any StoreFile

    init(_ file: any StoreFile) { self.file = file }

    func size() throws -> Int { try file.size() }
    func read(at offset: Int, count: Int) throws -> [UInt8] { try file.read(at: offset, count: count) }
    func write(_ bytes: [UInt8], at offset: Int) throws { throw StoreIOError(path: "", operation: "write (read-only)", code: EBADF) }
    func sync() throws {}
    func truncate(to size: Int) throws { throw StoreIOError(path: "", operation: "truncate (read-only)", code: EBADF) }
    func tryLock() throws -> Bool { false }
    func close() { file.close() }
    func identity() -> FileIdentity? { file.identity() }
    func map(capacity: Int) throws -> StoreFileMapping? { nil }
}
