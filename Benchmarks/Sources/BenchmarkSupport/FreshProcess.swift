import Foundation

/// A failure of a benchmark run, with a message to act on.
public struct BenchmarkError: Error, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Runs this executable again with `arguments` and returns what it printed.
///
/// Each measured configuration, ours and SQLite's, runs in a process of its own, so that it
/// starts with a cold heap: run one after the other in one process, a second
/// configuration reused the first one's freed memory and skipped its page faults (measured:
/// its insert ran up to a third faster).
///
/// - Throws: ``BenchmarkError`` if the process cannot start or exits with a nonzero status.
public func runThisExecutable(_ arguments: [String]) throws -> Data {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw BenchmarkError("`\(arguments.joined(separator: " "))` exited with status \(process.terminationStatus)")
    }
    return data
}

/// A new, empty folder in the temporary directory, named `prefix`-<UUID>.
public func makeScratchDirectory(_ prefix: String) throws -> URL {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    return dir
}
