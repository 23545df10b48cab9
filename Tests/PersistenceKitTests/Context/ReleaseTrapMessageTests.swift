import Foundation
import Testing

/// The release build of `TrapMessages` (`swift build -c release --product TrapMessages`),
/// which CI builds before the tests; `nil` when it was not built.
private let releaseTrapMessages: URL? = {
    let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let binary = root.appendingPathComponent(".build/release/TrapMessages")
    return FileManager.default.isExecutableFile(atPath: binary.path) ? binary : nil
}()

/// A programmer error traps with its message in release builds too: `precondition` drops its
/// message under `-O`, so the library traps through `programmerError`, which does not.
@Suite(
    "Trap messages in release builds",
    .enabled(if: releaseTrapMessages != nil, "needs `swift build -c release --product TrapMessages` (CI builds it)"))
struct ReleaseTrapMessageTests {
    /// Runs the release program with `argument`; its exit status and standard error.
    private func run(_ argument: String) throws -> (status: Int32, reason: Process.TerminationReason, stderr: String) {
        let process = Process()
        process.executableURL = releaseTrapMessages
        process.arguments = [argument]
        var environment = ProcessInfo.processInfo.environment
        environment["PERSISTENCEKIT_CONCURRENCY_DEBUG"] = "1"
        process.environment = environment
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let data = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, process.terminationReason, String(decoding: data, as: UTF8.self))
    }

    @Test("A programmer error traps with its message in a release build", arguments: [
        ("wrong-queue", "PersistenceKit concurrency violation"),
        ("unknown-key", "has no property 'subtitle'"),
        ("wrong-type", "wrong value type for 'Note.title'"),
    ])
    func releaseTrapPrintsItsMessage(_ mode: String, _ expected: String) throws {
        let result = try run(mode)
        #expect(result.reason == .uncaughtSignal, "\(mode) did not trap: exit status \(result.status)")
        #expect(result.stderr.contains(expected), "\(mode): the trap printed \(result.stderr)")
    }
}
