import Foundation

/// A throwaway PostgreSQL cluster for tests and benchmarks: `initdb` into a temporary folder (as the `postgres`
/// user when run as root), a free loopback port, its unix socket in the same folder, `pg_ctl -m immediate stop`
/// and removal at ``stop()``. It uses the Debian binaries under `/usr/lib/postgresql/*/bin`.
///
/// Starting fails with ``Failure`` (never silently), so a test that needs PostgreSQL fails when it cannot run.
public final class PostgresCluster: @unchecked Sendable {
    /// Why the cluster could not be started or used, with the command's output.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public let directory: URL
    public let port: Int
    private let binaries: URL
    private let lock = NSLock()
    private var stopped = false

    /// One cluster for the whole test process, started on first use and stopped when the process exits.
    public static func shared() throws -> PostgresCluster {
        try sharedCluster.get()
    }

    private static let sharedCluster: Result<PostgresCluster, any Error> = Result {
        let cluster = try PostgresCluster()
        atexit { try? PostgresCluster.sharedCluster.get().stop() }
        return cluster
    }

    /// Creates and starts a cluster. `settings` are extra server settings (`-c name=value`).
    public init(settings: [String: String] = [:]) throws {
        binaries = try Self.findBinaries()
        directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(
            "tablecast-pg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        port = try FreePort.find()
        if getuid() == 0 {
            try Self.run("/bin/chown", ["postgres:postgres", directory.path])
        }
        let data = directory.appendingPathComponent("data").path
        try runAsPostgres("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"])
        var options = "-p \(port) -k \(directory.path) -c listen_addresses=127.0.0.1"
        for (name, value) in settings.sorted(by: { $0.key < $1.key }) { options += " -c \(name)=\(value)" }
        try start(options: options)
    }

    /// `postgresql://postgres@127.0.0.1:PORT/DATABASE`.
    public func url(database: String = "postgres") -> String {
        "postgresql://postgres@127.0.0.1:\(port)/\(database)"
    }

    /// Creates a fresh database named `prefix` plus a random suffix and returns its URL.
    public func createDatabase(prefix: String = "t") throws -> String {
        let name = "\(prefix)_\(UUID().uuidString.prefix(8).lowercased())"
        try psql("CREATE DATABASE \(name)")
        return url(database: name)
    }

    /// Runs `sql` with psql on `database`.
    public func psql(_ sql: String, database: String = "postgres") throws {
        try runAsPostgres(
            "psql",
            ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", directory.path, "-p", "\(port)", "-d", database, "-c", sql])
    }

    /// Stops the server with `pg_ctl -m immediate stop` (as after a crash) and leaves the files.
    public func kill() throws {
        try runAsPostgres(
            "pg_ctl", ["-D", directory.appendingPathComponent("data").path, "-m", "immediate", "-w", "stop"])
    }

    /// Starts the server again after ``kill()``, on the same port.
    public func restart() throws {
        try start(options: "-p \(port) -k \(directory.path) -c listen_addresses=127.0.0.1")
    }

    /// Stops the server and removes its files; later calls do nothing.
    public func stop() throws {
        let first = lock.withLock { () -> Bool in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        try? kill()
        try FileManager.default.removeItem(at: directory)
    }

    private func start(options: String) throws {
        let data = directory.appendingPathComponent("data").path
        let log = directory.appendingPathComponent("server.log").path
        do {
            try runAsPostgres("pg_ctl", ["-D", data, "-l", log, "-w", "-t", "30", "-o", options, "start"])
        } catch {
            let serverLog = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            throw Failure(description: "\(error)\nserver log:\n\(serverLog)")
        }
    }

    private func runAsPostgres(_ tool: String, _ arguments: [String]) throws {
        let path = binaries.appendingPathComponent(tool).path
        if getuid() == 0 {
            try Self.run("/usr/sbin/runuser", ["-u", "postgres", "--", path] + arguments)
        } else {
            try Self.run(path, arguments)
        }
    }

    /// Runs a command to its end with posix_spawn and waitpid, its output in a file: Foundation's `Process` can
    /// wait forever for `pg_ctl`, whose server lives on in the background.
    private static func run(_ executable: String, _ arguments: [String]) throws {
        let outputPath = NSTemporaryDirectory() + "tablecast-pg-output-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard spawned == 0 else { throw Failure(description: "could not run \(executable): error \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        guard status == 0 else {
            throw Failure(
                description:
                    "\(executable) \(arguments.joined(separator: " ")) failed (wait status \(status)): \(output)")
        }
    }

    /// The newest `/usr/lib/postgresql/N/bin`.
    private static func findBinaries() throws -> URL {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
            .compactMap(Int.init).sorted()
        guard let newest = versions.last else {
            throw Failure(description: "no PostgreSQL under \(root) (install Debian's postgresql package: .ci/install)")
        }
        return URL(fileURLWithPath: "\(root)/\(newest)/bin")
    }
}
