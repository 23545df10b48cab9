import Foundation

/// Why a file store could not be opened or written, with the file and (for damage) the
/// byte offset where the problem was found.
public struct FileStoreError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What went wrong.
    public enum Kind: Sendable, Equatable {
        /// The file does not start with the store's magic bytes: not a PersistenceKit store.
        case notAStore
        /// The file was written by a newer version of the format.
        case newerFormatVersion(found: UInt32, supported: UInt32)
        /// A checksum or structure check failed: the file is damaged at ``FileStoreError/offset``.
        case corrupt
        /// The file ends early: it was cut short after it was last closed cleanly.
        case truncated
        /// Another process has the store open.
        case lockedByAnotherProcess
        /// The store was created with a different model.
        case modelMismatch(storeHash: String, modelHash: String)
        /// The store is already open in this process with other options (its durability):
        /// every coordinator in a process shares one store object, so they must agree.
        case optionsMismatch
        /// A file operation failed (see ``FileStoreError/underlying``).
        case io
        /// The store was closed.
        case closed
        /// A save or a request for keys asks for more than the format holds: a record over
        /// 2 GiB, primary keys past 2⁶², an entity index the model does not have, or a row
        /// the file could not read back (more values than its entity has properties, a value
        /// of a kind its property does not hold, one row twice in a save). Nothing was written.
        case limitExceeded
        /// The store is open in this process, so it cannot be destroyed (see
        /// ``FileStore/destroy(at:)``).
        case inUse
        /// The store was opened read-only (``FileStore/Options/readOnly``): nothing was
        /// written.
        case readOnly
    }

    /// What went wrong.
    public let kind: Kind
    /// The store file.
    public let path: String
    /// The byte offset of the damage, where it applies.
    public let offset: Int?
    /// A sentence saying what went wrong and what to do.
    public let message: String
    /// The failed file operation, for `.io`.
    public let underlying: StoreIOError?

    init(_ kind: Kind, path: String, offset: Int? = nil, _ message: String, underlying: StoreIOError? = nil) {
        self.kind = kind
        self.path = path
        self.offset = offset
        self.message = message
        self.underlying = underlying
    }

    static func io(_ error: StoreIOError, path: String, _ what: String) -> FileStoreError {
        FileStoreError(
            .io, path: path,
            "\(what) failed: \(error). Nothing of the failed operation is visible; the store is still usable.",
            underlying: error)
    }

    /// A readable summary for logs and messages.
    public var description: String {
        var s = "File store \(path)"
        if let offset { s += " at byte \(offset)" }
        return s + ": " + message
    }
}
