import Foundation
import PersistenceKit

/// Why a test container could not be made; names the file or folder and the cause.
public struct TestContainerError: Error, CustomStringConvertible, Sendable {
    /// What failed.
    public enum Kind: Sendable, Equatable {
        /// The folder for test stores could not be created.
        case cannotCreateFolder
        /// A store file left by an earlier run could not be removed.
        case cannotRemoveStaleFile
        /// The store did not load.
        case loadFailed
    }

    /// What failed.
    public let kind: Kind
    /// The folder or file involved.
    public let path: String
    /// The underlying error, described.
    public let reason: String

    /// A readable summary for logs and messages.
    public var description: String {
        switch kind {
        case .cannotCreateFolder:
            "Cannot create the test store folder \(path): \(reason). Choose another subDirectory or fix its permissions."
        case .cannotRemoveStaleFile:
            "Cannot remove the stale test store file \(path): \(reason). Delete it by hand or fix its permissions."
        case .loadFailed:
            "The test store \(path) did not load: \(reason)."
        }
    }
}
