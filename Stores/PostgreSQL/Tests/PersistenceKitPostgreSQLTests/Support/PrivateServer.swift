import Foundation
import Testing

/// A PostgreSQL server of a test's own, which the test may stop and start: a data folder
/// and Unix socket in a temporary folder, no TCP port. Made with the server programs in
/// `PK_POSTGRES_BIN` (`.ci/run` sets it); run as the user `PK_POSTGRES_RUN_AS` names (with
/// `runuser`) when set, as PostgreSQL refuses to run as root.
final class PrivateServer {
    static let binaries: String? = ProcessInfo.processInfo.environment["PK_POSTGRES_BIN"].flatMap { $0.isEmpty ? nil : $0 }
    static let runAs: String? = ProcessInfo.processInfo.environment["PK_POSTGRES_RUN_AS"].flatMap { $0.isEmpty ? nil : $0 }

    static let isConfigured = binaries != nil

    static let skipReason: Comment =
        "PK_POSTGRES_BIN is not set: no PostgreSQL programs to start a private server with (set it to the folder of initdb and pg_ctl, and PK_POSTGRES_RUN_AS to the user to run them as when testing as root, or run .ci/run)."

    let folder: URL
    let user: String
    private let bin: String

    /// Makes the data folder (`initdb`) and starts the server.
    init() throws {
        bin = try #require(Self.binaries)
        folder = URL(fileURLWithPath: "/tmp/pk-pg-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        if let runAs = Self.runAs { try Self.run("/bin/chown", [runAs, folder.path]) }
        // The server's superuser is the user it runs as (as initdb names it by default).
        user = Self.runAs ?? getpwuid(getuid()).map { String(cString: $0.pointee.pw_name) } ?? "postgres"
        try serverCommand("initdb", ["-D", data, "-A", "trust", "-U", user, "--no-sync"])
        try start()
    }

    /// A hot standby of `primary`: a base backup of it (`pg_basebackup -R`, which writes the
    /// standby's settings) in a data folder of its own, started on a socket of its own. It
    /// replays the primary's log as the primary writes it, and takes reads only.
    init(standbyOf primary: PrivateServer) throws {
        bin = try #require(Self.binaries)
        folder = URL(fileURLWithPath: "/tmp/pk-pg-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        if let runAs = Self.runAs { try Self.run("/bin/chown", [runAs, folder.path]) }
        user = primary.user
        try serverCommand("pg_basebackup", ["-D", data, "-h", primary.folder.path, "-U", user, "-R", "-X", "stream", "--no-sync"])
        try start()
    }

    deinit {
        try? serverCommand("pg_ctl", ["-D", data, "-m", "immediate", "stop"])
        try? FileManager.default.removeItem(at: folder)
    }

    private var data: String { folder.appendingPathComponent("data").path }

    /// The URL of the server's `postgres` database.
    var url: URL {
        get throws { try #require(URL(string: "postgresql://\(user)@/postgres?host=\(folder.path)")) }
    }

    /// Starts the server and waits until it accepts connections (crash recovery included).
    ///
    /// With `fsync` off: the tests stop the server, not the machine, and the kernel keeps
    /// every write the server made before it died (a commit is acknowledged only once its
    /// log record is written); with it on, each start after a crash first syncs the whole
    /// data folder, seconds on a busy machine.
    func start() throws {
        try serverCommand(
            "pg_ctl",
            ["-D", data, "-l", folder.appendingPathComponent("log").path, "-w", "-t", "30", "-o",
             "-k \(folder.path) -c listen_addresses='' -c max_connections=20 -c shared_buffers=16MB -c fsync=off", "start"])
    }

    /// Stops the server at once, as a crash would: every backend ends mid-statement and the
    /// next start recovers from the write-ahead log.
    func kill() throws {
        try serverCommand("pg_ctl", ["-D", data, "-m", "immediate", "stop"])
    }

    private func serverCommand(_ program: String, _ arguments: [String]) throws {
        let path = bin + "/" + program
        if let runAs = Self.runAs {
            try Self.run("/usr/sbin/runuser", ["-u", runAs, "--", path] + arguments)
        } else {
            try Self.run(path, arguments)
        }
    }

    /// Runs a program to its end (`posix_spawn` and `waitpid`); throws with its output when
    /// it fails. Foundation's `Process` is not used: it watches for the end through a
    /// descriptor the child inherits, which the server `pg_ctl start` leaves running inherits
    /// too, so it would wait as long as the server runs. The output goes to a file for the
    /// same reason.
    private static func run(_ path: String, _ arguments: [String]) throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("pk-pg-command-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: log) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, log.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
        guard spawned == 0 else {
            throw ServerCommandError(command: path, status: spawned, output: String(cString: strerror(spawned)))
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        // Exited normally with status 0: the low 7 bits (signal) and the exit code are zero.
        guard status == 0 else {
            throw ServerCommandError(
                command: ([path] + arguments).joined(separator: " "), status: status,
                output: (try? String(contentsOf: log, encoding: .utf8)) ?? "")
        }
    }
}

/// A server program that failed, with what it printed.
struct ServerCommandError: Error, CustomStringConvertible {
    let command: String
    let status: Int32
    let output: String
    var description: String { "\(command) exited with \(status): \(output)" }
}
