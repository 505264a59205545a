import ArgumentParser
import Foundation
import TablecastClient

/// What a run leaves for its report; a worker sends it to its coordinator, which merges its workers'.
struct LoadOutcome: Codable, Sendable {
    var stats: LoadStats.Snapshot
    var sendingSeconds: Double
    var deliverySeconds: Double
    var failures: [String]
    var replicasCompared: Int
    /// The run second by second (workers start together, so their seconds line up).
    var series: LoadSeries
    /// The server's name and version, as its welcome said.
    var server: [String]?
    /// With --server-pid, the server's CPU time over the run in seconds.
    var serverCPUSeconds: Double?
}

/// One line-oriented TCP connection between a coordinator and a worker (`tablecast load --workers`, --worker-of).
/// Lines are `WORD JSON`; calls block, so they run off the concurrency pool (`blocking`).
final class LoadWorkerLink: @unchecked Sendable {
    /// The link of a process running as a worker, for the run to send its outcome on.
    @TaskLocal static var current: LoadWorkerLink?

    private let descriptor: Int32
    private var buffer: [UInt8] = []

    init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { close(descriptor) }

    /// Connects to `HOST:PORT`.
    static func connect(to address: String) throws -> LoadWorkerLink {
        let (host, port) = try split(address)
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &found) == 0, let first = found else {
            throw ValidationError("cannot resolve \(address)")
        }
        defer { freeaddrinfo(found) }
        let descriptor = socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0, Glibc.connect(descriptor, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
            if descriptor >= 0 { close(descriptor) }
            throw ValidationError(
                "cannot connect to the coordinator at \(address): \(String(cString: strerror(errno)))")
        }
        return LoadWorkerLink(descriptor: descriptor)
    }

    static func split(_ address: String) throws -> (String, Int) {
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]),
            (0...65535).contains(port)
        else { throw ValidationError("'\(address)' is not HOST:PORT") }
        return (String(address[..<colon]), port)
    }

    func send<T: Encodable>(_ word: String, _ value: T) throws {
        let line = Array("\(word) ".utf8) + (try JSONEncoder().encode(value)) + [UInt8(ascii: "\n")]
        var sent = 0
        while sent < line.count {
            // MSG_NOSIGNAL: a peer that went away is an error here, not SIGPIPE.
            let written = line[sent...].withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard written > 0 else { throw ValidationError("the other end of a worker link closed") }
            sent += written
        }
    }

    /// The next line's word and JSON; nil when the other end closed.
    func receive() throws -> (word: String, json: Data)? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = buffer[..<newline]
                buffer.removeFirst(newline + 1)
                let space = line.firstIndex(of: UInt8(ascii: " ")) ?? line.endIndex
                return (String(decoding: line[..<space], as: UTF8.self), Data(line[space...].dropFirst()))
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { return nil }
            buffer += chunk[..<count]
        }
    }

    /// Says `word` to the coordinator and waits until it says it back (when every worker said it).
    func barrier(_ word: String) async throws {
        try send(word, [String: Int]())
        guard let (answer, _) = try await Self.blocking({ try self.receive() }), answer == word else {
            throw ValidationError("the coordinator did not answer `\(word)`")
        }
    }

    /// Runs blocking socket work on a thread of its own, not the concurrency pool's.
    static func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
        }
    }
}

/// Where a coordinator waits for its workers.
final class LoadWorkerListener: @unchecked Sendable {
    let descriptor: Int32
    let port: Int

    init(_ address: String) throws {
        let (host, port) = try LoadWorkerLink.split(address)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            close(descriptor)
            throw ValidationError("--listen: '\(host)' is not an IPv4 address")
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, Glibc.listen(descriptor, 64) == 0 else {
            close(descriptor)
            throw ValidationError("--listen \(host):\(port): \(String(cString: strerror(errno)))")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        self.descriptor = descriptor
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(descriptor) }

    /// The next worker to connect, or nil after `timeout` seconds.
    func accept(timeout: Double) -> LoadWorkerLink? {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(timeout * 1000)) == 1 else { return nil }
        let worker = Glibc.accept(descriptor, nil, nil)
        return worker >= 0 ? LoadWorkerLink(descriptor: worker) : nil
    }
}

extension LoadCommand {
    static let workerGreeting = "tablecast-load-worker"

    /// A worker: asks the coordinator for its options and runs them, sending its outcome back.
    func runAsWorker(of address: String) async throws {
        let link = try await LoadWorkerLink.blocking { try LoadWorkerLink.connect(to: address) }
        try link.send(Self.workerGreeting, 1)
        guard let (word, json) = try await LoadWorkerLink.blocking({ try link.receive() }), word == "run" else {
            throw ValidationError("the coordinator at \(address) sent no `run` line")
        }
        let command = try LoadCommand.parse(try JSONDecoder().decode([String].self, from: json))
        try await LoadWorkerLink.$current.withValue(link) { try await command.run() }
    }

    /// The coordinator: creates the tables (with --create), starts --workers processes, gives each worker its share
    /// of the load, and reports their outcomes merged.
    func coordinate() async throws {
        let total = fleet.workers + fleet.remoteWorkers
        if create { try await createTablesOnce() }
        let listener = try LoadWorkerListener(fleet.listen)
        let marker = String(UInt64.random(in: 0...UInt64.max), radix: 36).prefix(8)
        progress("coordinator listening on port \(listener.port) for \(total) worker(s)\n")
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let processes = try (0..<fleet.workers).map { _ in
            let process = Process()
            process.executableURL = executable
            process.arguments = ["load", "--worker-of", "127.0.0.1:\(listener.port)"]
            // A worker's report goes over its link; stdout is the coordinator's (e.g. its JSON). Errors go to stderr.
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            return process
        }
        var links: [LoadWorkerLink] = []
        for _ in 0..<total {
            guard
                let link = try await LoadWorkerLink.blocking({ listener.accept(timeout: self.timeout) }),
                let (word, _) = try await LoadWorkerLink.blocking({ try link.receive() }),
                word == Self.workerGreeting
            else {
                throw await abandon(
                    processes, because: "\(links.count) of \(total) worker(s) connected in \(format(timeout))s", code: 2
                )
            }
            try link.send("run", workerArguments(share: links.count, of: total, marker: String(marker)))
            links.append(link)
        }
        // Workers start together, and compare their replicas once none sends any more.
        for word in ["ready", "sent"] {
            for (index, link) in links.enumerated() {
                guard let (said, _) = try await LoadWorkerLink.blocking({ try link.receive() }), said == word else {
                    throw await abandon(processes, because: "worker \(index) ended before `\(word)`")
                }
            }
            for link in links { try link.send(word, [String: Int]()) }
        }
        let stats = LoadStats(refMarker: "", budget: 0)
        var merged = LoadOutcome(
            stats: stats.snapshot, sendingSeconds: 0, deliverySeconds: 0, failures: [], replicasCompared: 0,
            series: LoadSeries(), server: nil)
        for (index, link) in links.enumerated() {
            guard let (word, json) = try await LoadWorkerLink.blocking({ try link.receive() }), word == "result"
            else {
                throw await abandon(processes, because: "worker \(index) ended without a result")
            }
            let outcome = try JSONDecoder().decode(LoadOutcome.self, from: json)
            stats.merge(outcome.stats)
            merged.sendingSeconds = max(merged.sendingSeconds, outcome.sendingSeconds)
            merged.deliverySeconds = max(merged.deliverySeconds, outcome.deliverySeconds)
            // Workers start together, so each measured the same server over about the same span.
            if let seconds = outcome.serverCPUSeconds {
                merged.serverCPUSeconds = max(merged.serverCPUSeconds ?? 0, seconds)
            }
            merged.failures += outcome.failures.map { "worker \(index): \($0)" }
            merged.replicasCompared += outcome.replicasCompared
            merged.series.merge(outcome.series)
            merged.server = merged.server ?? outcome.server
        }
        for process in processes { process.waitUntilExit() }
        try finish(merged, stats: stats, plan: drive.plan(subscribers: subscribers, rate: rate, seconds: duration))
    }

    /// A worker failed: stops the others; the exit code is a failed local worker's own (2: the server did not
    /// answer its set-up), else `code`.
    private func abandon(_ processes: [Process], because reason: String, code: Int32 = 1) async -> ExitCode {
        Output.error("tablecast load: \(reason)")
        try? await Task.sleep(for: .milliseconds(200))
        let failed = processes.first { !$0.isRunning && $0.terminationStatus != 0 }?.terminationStatus
        for process in processes where process.isRunning { process.terminate() }
        return ExitCode(failed ?? code)
    }

    /// Drops and creates the tables once, before the workers start (they run without --create).
    private func createTablesOnce() async throws {
        let transport = try TablecastTransport(
            configuration: .init(maxMessageSize: TablecastTransport.defaultMaxMessageSize, tls: tls.clientTLS))
        let admin = try TablecastClient(configuration: .init(url: servers(from: 0)), transport: transport)
        admin.connect()
        try await setUp(diagnosing: admin) { try await createTables(tables, admin: admin) }
        await admin.close()
        await transport.shutdown()
    }

    /// `total` split into `parts`: the first `total % parts` get one more.
    static func share(_ total: Int, _ index: Int, of parts: Int) -> Int {
        total / parts + (index < total % parts ? 1 : 0)
    }

    /// The arguments of worker `index`: this command's, without the coordinator's own, with its share of
    /// subscribers, writers, replicas, rate, count, churn and stages.
    func workerArguments(share index: Int, of total: Int, marker: String) -> [String] {
        let own: Set = [
            "--workers", "--remote-workers", "--listen", "--subscribers", "--writers", "--rate", "--count", "--churn",
            "--stage", "--replicas", "--threshold", "--url", "--create", "--json", "--quiet", "--worker-of", "--out",
            "--report", "--run-marker",
        ]
        let flags: Set = ["--create", "--json", "--quiet"]
        var kept: [String] = []
        var arguments = CommandLine.arguments.dropFirst(2)[...]
        while let argument = arguments.popFirst() {
            let name = String(argument.split(separator: "=", maxSplits: 1)[0])
            if own.contains(name) {
                if !flags.contains(name), !argument.contains("=") { _ = arguments.popFirst() }
                continue
            }
            kept.append(argument)
        }
        func split(_ value: Double) -> String { String(value / Double(total)) }
        var result =
            kept + [
                "--url", url, "--quiet", "--run-marker", marker, "--writers",
                String(Self.share(writers, index, of: total)),
            ]
        if drive.stages.isEmpty {
            result += ["--subscribers", String(Self.share(subscribers, index, of: total))]
            if let rateFlag { result += ["--rate", split(rateFlag)] }
        }
        for stage in drive.stages {
            let seconds = String(format: "%.3fs", stage.seconds)
            result += ["--stage", "\(seconds):\(Self.share(stage.subscribers, index, of: total)):\(split(stage.rate))"]
        }
        if let count { result += ["--count", String(Self.share(count, index, of: total))] }
        if drive.churn > 0 { result += ["--churn", split(drive.churn)] }
        if let replicas { result += ["--replicas", String(Self.share(replicas, index, of: total))] }
        return result
    }

    /// With --raw-samples DIR: each latency sample (µs) of this process, a file per kind (`<run>-delivery.txt`…).
    func writeRawSamples(_ stats: LoadStats, run: Substring) throws {
        guard let directory = fleet.rawSamples else { return }
        for (kind, samples) in stats.raw {
            let text = samples.map(String.init).joined(separator: "\n") + "\n"
            try text.write(toFile: "\(directory)/\(run)-\(kind).txt", atomically: true, encoding: .utf8)
        }
    }
}
