import ArgumentParser
import Foundation
import TablecastTesting

/// Tablecast itself (`tablecast serve`, synchronous=FULL, one table) against libwebsockets' C mirror server, side
/// by side in one run, at several numbers of subscribers of one table.
///
/// The mirror is driven by ``FanOutClient`` (1 publisher, `window` messages in flight, each until every
/// subscriber has it); Tablecast by `tablecast load` with one raw writer keeping `window` edits in flight and raw
/// counting subscribers, each edit being committed (fsync) before it is fanned out. Tablecast runs under two window
/// rules: `delivery`, the mirror's (an edit is in flight until acked and every subscriber has it), and `ack` (until
/// acked: the writer can run ahead of the fan-out, so latency includes that backlog). Deliveries/s are messages
/// received by subscribers per second; p99 is the send → delivery latency; CPU/delivery is the server process's
/// user + system time over the whole run (connections and handshakes included) divided by its deliveries, then
/// the same over the deliveries alone (from the first message, once every subscriber is connected).
struct VersusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "versus",
        abstract:
            "Tablecast (serve + load) vs the lws C mirror server at 1,000 / 5,000 / 10,000 subscribers of one table.")

    @Option(help: "Subscriber counts, comma-separated.") var sizes = "1000,5000,10000"
    @Option(help: "Messages published to the mirror, and edits sent to Tablecast, per size.") var messages = 2000
    @Option(help: "Messages (edits) in flight.") var window = 16
    @Option(help: "Mirror message size in bytes (122: one client frame per 128-byte read of the C server).") var size =
        122
    @Option(
        help:
            "Tablecast's window rules, comma-separated: delivery (in flight until every subscriber has it, as the mirror's publisher), ack (until acked)."
    )
    var tablecastWindows = "delivery,ack"
    @Option(help: "libwebsockets' test server (Debian package libwebsockets-test-server).")
    var lwsServer = "/usr/bin/libwebsockets-test-server"
    @Option(help: "The tablecast executable. Default: the one next to this one.") var tablecast: String?

    func run() async throws {
        raiseOpenFileLimit()
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let tablecast = tablecast ?? me.deletingLastPathComponent().appendingPathComponent("tablecast").path
        let counts = sizes.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        print("1 publisher / 1 raw writer, \(messages) messages per size, window \(window)")
        let rules = tablecastWindows.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        print(
            "subscribers | lws mirror deliveries/s, p50, p99, server CPU/delivery (whole run; deliveries alone) |"
                + " Tablecast (window until) deliveries/s, p50, p99, server CPU/delivery (same) | ratio")
        for subscribers in counts {
            let mirror = try await runMirror(subscribers: subscribers)
            for rule in rules {
                let ours = try runTablecast(tablecast, subscribers: subscribers, windowUntil: rule)
                print(
                    String(
                        format:
                            "%6d | %9.0f/s  p50 %6.0f ms  p99 %6.0f ms  %5.2f; %5.2f µs | (%@) %9.0f/s  p50 %6.0f ms  p99 %6.0f ms  %5.2f; %5.2f µs | %.2f×%@",
                        subscribers, mirror.perSecond, mirror.p50, mirror.p99, mirror.cpuPerDelivery,
                        mirror.cpuPerDeliveryAlone, rule as NSString, ours.perSecond, ours.p50, ours.p99,
                        ours.cpuPerDelivery, ours.cpuPerDeliveryAlone,
                        ours.perSecond / max(1, mirror.perSecond), (mirror.note + ours.note) as NSString))
            }
        }
    }

    private struct Figures {
        var perSecond: Double
        var p50: Double
        var p99: Double
        /// The server's CPU time per delivery, in microseconds: over the whole run, and from the first message on.
        var cpuPerDelivery: Double
        var cpuPerDeliveryAlone: Double
        var note = ""
    }

    private func runMirror(subscribers: Int) async throws -> Figures {
        let port = try FreePort.find()
        let process = try ServerProcess(
            name: "lws C mirror server", executable: lwsServer, arguments: ["--port=\(port)", "-d", "1"], port: port)
        defer { process.stop() }
        var (atStart, atEnd) = (Double.nan, Double.nan)
        let result = try await FanOutClient(
            .init(subscribers: subscribers, messages: messages, size: size, window: window)
        ).run(
            port: port, subprotocol: "lws-mirror-protocol", starting: { atStart = process.cpuSeconds },
            finished: { atEnd = process.cpuSeconds })
        let latency = result.latencyMicroseconds
        let deliveries = Double(max(1, result.deliveries))
        return Figures(
            perSecond: result.deliveriesPerSecond, p50: Double(latency.valueAtPercentile(50)) / 1000,
            p99: Double(latency.valueAtPercentile(99)) / 1000, cpuPerDelivery: process.cpuSeconds * 1e6 / deliveries,
            cpuPerDeliveryAlone: (atEnd - atStart) * 1e6 / deliveries,
            note: result.unexpectedCloses > 0 ? "  (mirror: \(result.unexpectedCloses) unexpected closes)" : "")
    }

    private func runTablecast(_ tablecast: String, subscribers: Int, windowUntil: String) throws -> Figures {
        let port = try FreePort.find()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("versus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try ServerProcess(
            name: "tablecast serve", executable: tablecast,
            arguments: [
                "serve", "--port", String(port), "--db", directory.appendingPathComponent("versus.db").path,
                "--sync", "full", "--max-connections", String(subscribers + 100), "--intents-per-second", "1000000",
                "--log-level", "warning",
            ], port: port)
        defer { server.stop() }
        let load = Process()
        load.executableURL = URL(fileURLWithPath: tablecast)
        load.arguments = [
            "load", "--url", "ws://127.0.0.1:\(port)/", "--create", "--initial-rows", "100", "--subscribers",
            String(subscribers), "--replicas", "0", "--raw-writers", "--writers", "1", "--mix", "edit=1", "--in-flight",
            String(window), "--window-until", windowUntil, "--count", String(messages), "--server-pid",
            String(server.pid), "--json", "--quiet",
        ]
        let output = Pipe()
        load.standardOutput = output
        load.standardError = FileHandle.nullDevice
        try load.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        load.waitUntilExit()
        // The report is the last line: --server-pid prints the server's memory before it.
        let lastLine = data.split(separator: UInt8(ascii: "\n")).last ?? data[...]
        guard let report = try JSONSerialization.jsonObject(with: Data(lastLine)) as? [String: Any],
            let deliveries = report["deliveries"] as? [String: Any],
            let latency = (report["latencyMs"] as? [String: Any])?["intentToDelivery"] as? [String: Any]
        else { throw BenchError("tablecast load printed no report (exit \(load.terminationStatus))") }
        let convergence = (report["convergence"] as? [String: Any])?["ok"] as? Bool ?? false
        let delivered = deliveries["count"] as? Double ?? 0
        let runSeconds = (report["serverCPU"] as? [String: Any])?["seconds"] as? Double ?? .nan
        return Figures(
            perSecond: deliveries["perSecond"] as? Double ?? 0, p50: latency["p50"] as? Double ?? 0,
            p99: latency["p99"] as? Double ?? 0, cpuPerDelivery: server.cpuSeconds * 1e6 / max(1, delivered),
            cpuPerDeliveryAlone: runSeconds * 1e6 / max(1, delivered),
            note: convergence ? "" : "  (tablecast: convergence FAILED)")
    }

    private func raiseOpenFileLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}
