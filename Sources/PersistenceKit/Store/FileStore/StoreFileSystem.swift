import Foundation

/// The file operations the file store needs, as a protocol so that tests can inject
/// faults (short writes, a full disk, failing `fsync`, failing renames).
///
/// Implementations must report failures by throwing; they never write partially without
/// throwing (a short write must throw after writing what it wrote).
public protocol StoreFileSystem: Sendable {
    /// Opens (and with `create`, creates if missing) a file for reading and writing.
    func open(_ path: String, create: Bool) throws -> any StoreFile
    /// Whether a file exists at `path`.
    func fileExists(_ path: String) -> Bool
    /// Atomically replaces `to` with `from`.
    func rename(_ from: String, to: String) throws
    /// Removes the file at `path` (no error if it does not exist).
    func remove(_ path: String) throws
    /// Makes the directory entry changes in `directory` durable (`fsync` of the directory).
    func syncDirectory(_ directory: String) throws
    /// The identity of the file at `path`; `nil` when unknown. (A default is provided.)
    func identity(ofPath path: String) -> FileIdentity?
}

/// An open file of the store.
public protocol StoreFile: AnyObject, Sendable {
    /// The file's size in bytes.
    func size() throws -> Int
    /// Reads `count` bytes at `offset` (fewer at end of file).
    func read(at offset: Int, count: Int) throws -> [UInt8]
    /// Writes all of `bytes` at `offset`, or throws.
    func write(_ bytes: [UInt8], at offset: Int) throws
    /// Writes all of `bytes` at `offset`, or throws. Saves write their records through this
    /// one, from the buffer they were encoded in. (A default is provided: it copies the bytes
    /// into an array and calls ``write(_:at:)``.)
    func write(contentsOf bytes: UnsafeRawBufferPointer, at offset: Int) throws
    /// Flushes the file's data to stable storage (`fsync`).
    func sync() throws
    /// Cuts the file to `size` bytes.
    func truncate(to size: Int) throws
    /// Takes an exclusive advisory lock without waiting; `false` when another process holds it.
    /// The lock needs to exclude other processes only: the store itself keeps two store
    /// objects of one process from holding the same lock file.
    func tryLock() throws -> Bool
    /// Closes the file (and releases its lock).
    func close()
    /// The identity of the open file; `nil` when unknown. (A default is provided.)
    func identity() -> FileIdentity?
    /// Maps the file read-only; `nil` when this file layer cannot. (A default is provided.)
    func map(capacity: Int) throws -> StoreFileMapping?
}

/// Which file an open file or a path is (device and inode), to notice a path that now
/// names a different file than the one opened.
public struct FileIdentity: Hashable, Sendable {
    /// The device number.
    public var device: UInt64
    /// The inode number.
    public var inode: UInt64

    /// Creates an identity.
    public init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }
}

extension StoreFileSystem {
    /// The identity of the file at `path`; `nil` when unknown (file systems that cannot tell
    /// skip the checks that need it).
    public func identity(ofPath path: String) -> FileIdentity? { nil }
}

extension StoreFile {
    /// The identity of the open file; `nil` when unknown.
    public func identity() -> FileIdentity? { nil }

    /// Maps the file read-only into memory, reserving `capacity` bytes of address space so
    /// that later appends to the file show up in the mapping; `nil` when this file layer
    /// cannot map (the store then reads the file into memory instead).
    public func map(capacity: Int) throws -> StoreFileMapping? { nil }

    /// Copies `bytes` into an array and writes it with ``write(_:at:)``.
    public func write(contentsOf bytes: UnsafeRawBufferPointer, at offset: Int) throws {
        try write(Array(bytes), at: offset)
    }
}

/// A read-only memory mapping of a store file, unmapped when released.
///
/// Only bytes the file holds may be read through it: pages past the end of the file are
/// not backed. Bytes written to the file later (with `write(_:at:)`) appear in the mapping
/// at their offsets, as long as they lie within ``capacity``.
public final class StoreFileMapping: @unchecked Sendable {
    // @unchecked Sendable: both stored properties are immutable after init, and the memory
    // is mapped PROT_READ: no thread can write through the pointer, so sharing it is safe.
    // The unmap closure runs once, in deinit, when no other reference remains.
    /// The first byte of the mapping.
    public let base: UnsafeRawPointer
    /// The size of the mapping in bytes (it may extend past the end of the file).
    public let capacity: Int
    private let unmap: @Sendable (UnsafeRawPointer, Int) -> Void

    /// Wraps a mapping of `capacity` bytes at `base`; `unmap` releases it.
    public init(base: UnsafeRawPointer, capacity: Int, unmap: @escaping @Sendable (UnsafeRawPointer, Int) -> Void) {
        self.base = base
        self.capacity = capacity
        self.unmap = unmap
    }

    deinit { unmap(base, capacity) }
}

/// A failure of a file operation, with the path, the operation and `errno`.
public struct StoreIOError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The file involved.
    public let path: String
    /// The operation that failed (`open`, `write`, `fsync`, …).
    public let operation: String
    /// The system error number (`ENOSPC`, `EIO`, …), or 0 for a short write.
    public let code: Int32

    /// Creates an I/O error.
    public init(path: String, operation: String, code: Int32) {
        self.path = path
        self.operation = operation
        self.code = code
    }

    /// A readable summary for logs and messages.
    public var description: String {
        let reason = code == 0 ? "short write" : String(cString: strerror(code))
        return "\(operation) failed for \(path): \(reason) (errno \(code))"
    }
}
