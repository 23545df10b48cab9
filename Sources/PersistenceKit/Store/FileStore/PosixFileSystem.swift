import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The real file system, through POSIX calls.
public struct PosixFileSystem: StoreFileSystem {
    /// Creates the POSIX file system.
    public init() {}

    /// See ``StoreFileSystem``.
    public func open(_ path: String, create: Bool) throws -> any StoreFile {
        let flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0)
        let fd = path.withCString { Glibc_open($0, flags, 0o644) }
        guard fd >= 0 else { throw StoreIOError(path: path, operation: "open", code: errno) }
        return PosixFile(fd: fd, path: path)
    }

    /// Opens `path` for reading only: reading a store's header must not need permission to
    /// write the file (opened read-write, the metadata of a read-only store cannot be read).
    /// Non-blocking, so that a path naming a FIFO fails the header check instead of waiting
    /// for a writer (no effect on regular files).
    func openForReading(_ path: String) throws -> any StoreFile {
        let fd = path.withCString { Glibc_open($0, O_RDONLY | O_CLOEXEC | O_NONBLOCK, 0) }
        guard fd >= 0 else { throw StoreIOError(path: path, operation: "open", code: errno) }
        return PosixFile(fd: fd, path: path)
    }

    /// See ``StoreFileSystem``.
    public func fileExists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    /// See ``StoreFileSystem``.
    public func rename(_ from: String, to: String) throws {
        guard sysRename(from, to) == 0 else { throw StoreIOError(path: to, operation: "rename", code: errno) }
    }

    /// See ``StoreFileSystem``.
    public func remove(_ path: String) throws {
        guard unlink(path) == 0 || errno == ENOENT else { throw StoreIOError(path: path, operation: "unlink", code: errno) }
    }

    /// See ``StoreFileSystem``.
    public func identity(ofPath path: String) -> FileIdentity? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return FileIdentity(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
    }

    /// See ``StoreFileSystem``.
    public func syncDirectory(_ directory: String) throws {
        let fd = directory.withCString { Glibc_open($0, O_RDONLY | O_CLOEXEC, 0) }
        guard fd >= 0 else { throw StoreIOError(path: directory, operation: "open directory", code: errno) }
        defer { _ = sysClose(fd) }
        guard fsync(fd) == 0 else { throw StoreIOError(path: directory, operation: "fsync directory", code: errno) }
    }
}

private func sysRename(_ from: String, _ to: String) -> Int32 {
    #if canImport(Darwin)
    Darwin.rename(from, to)
    #else
    Glibc.rename(from, to)
    #endif
}

private func sysClose(_ fd: Int32) -> Int32 {
    #if canImport(Darwin)
    Darwin.close(fd)
    #else
    Glibc.close(fd)
    #endif
}

/// `open(2)` under a name that does not clash with `StoreFileSystem.open`.
private func Glibc_open(_ path: UnsafePointer<CChar>, _ flags: Int32, _ mode: mode_t) -> Int32 {
    #if canImport(Darwin)
    Darwin.open(path, flags, mode)
    #else
    Glibc.open(path, flags, mode)
    #endif
}

/// A file descriptor. Every call is a single system call on an immutable descriptor, so the
/// type is safe to share; the store serializes writes itself.
final class PosixFile: StoreFile {
    let fd: Int32
    let path: String

    init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { close() }

    func size() throws -> Int {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw StoreIOError(path: path, operation: "fstat", code: errno) }
        return Int(st.st_size)
    }

    func identity() -> FileIdentity? {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        return FileIdentity(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
    }

    func read(at offset: Int, count: Int) throws -> [UInt8] {
        var result = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = result.withUnsafeMutableBytes { buf in
                pread(fd, buf.baseAddress! + done, count - done, off_t(offset + done))
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw StoreIOError(path: path, operation: "read", code: errno)
            }
            if n == 0 { break }
            done += n
        }
        if done < count { result.removeLast(count - done) }
        return result
    }

    func write(_ bytes: [UInt8], at offset: Int) throws {
        try bytes.withUnsafeBytes { try write(contentsOf: $0, at: offset) }
    }

    func write(contentsOf bytes: UnsafeRawBufferPointer, at offset: Int) throws {
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
            if n < 0 {
                if errno == EINTR { continue }
                throw StoreIOError(path: path, operation: "write", code: errno)
            }
            if n == 0 { throw StoreIOError(path: path, operation: "write", code: 0) }
            done += n
        }
    }

    func map(capacity: Int) throws -> StoreFileMapping? {
        let pageSize = max(Int(sysconf(Int32(_SC_PAGESIZE))), 4096)
        let length = max(pageSize, (capacity + pageSize - 1) / pageSize * pageSize)
        guard let base = mmap(nil, length, PROT_READ, MAP_SHARED, fd, 0), base != MAP_FAILED else {
            throw StoreIOError(path: path, operation: "mmap", code: errno)
        }
        return StoreFileMapping(base: UnsafeRawPointer(base), capacity: length) { base, length in
            _ = munmap(UnsafeMutableRawPointer(mutating: base), length)
        }
    }

    func sync() throws {
        guard fsync(fd) == 0 else { throw StoreIOError(path: path, operation: "fsync", code: errno) }
    }

    func truncate(to size: Int) throws {
        guard ftruncate(fd, off_t(size)) == 0 else { throw StoreIOError(path: path, operation: "ftruncate", code: errno) }
    }

    /// A POSIX record lock (`fcntl(F_SETLK)`) on the whole file, not `flock`: a `flock` lock
    /// belongs to the open file description, which every child process forked while the
    /// store is open shares until it execs, so a store closed and opened again during a
    /// `Process.run()` on another thread would find its own lock still held (a spurious
    /// `lockedByAnotherProcess`). Record locks belong to the process and are not
    /// inherited. They do not exclude within the process, and closing any descriptor of
    /// the file drops them: ``StoreLock`` covers both.
    func tryLock() throws -> Bool {
        var lock = flock()
        lock.l_type = numericCast(F_WRLCK)
        lock.l_whence = numericCast(SEEK_SET)
        lock.l_start = 0
        lock.l_len = 0  // to the end of the file, however long it grows
        if fcntl(fd, F_SETLK, &lock) == 0 { return true }
        if errno == EAGAIN || errno == EACCES { return false }
        throw StoreIOError(path: path, operation: "fcntl(F_SETLK)", code: errno)
    }

    private let closed = ClosedFlag()

    func close() {
        if closed.set() { _ = sysClose(fd) }
    }
}

/// Makes `close()` idempotent across threads.
final class ClosedFlag: Sendable {
    private let flag = Synchronization.Atomic<Bool>(false)
    /// Sets the flag; returns whether this call was the first.
    func set() -> Bool { !flag.exchange(true, ordering: .acquiringAndReleasing) }
}
