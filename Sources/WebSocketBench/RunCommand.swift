import ArgumentParser
import Foundation
import TablecastTesting

/// Runs the fan-out benchmark against our mirror server and libwebsockets' C mirror server, one after the
/// other, each as a child process on a free loopback port, with the same client.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "run", abstract: "Run the fan-out benchmark.")

    enum Target: String, ExpressibleByArgument, CaseIterable {
        case both, ours, lws
    }

    @Option(help: "Subscriber connections.") var subscribers = 1000
    @Option(help: "Messages published.") var messages = 5000
    /// 122 bytes make a 128-byte client frame (6 bytes of header and mask), the C mirror server's read size:
    /// it relays every receive callback as one message, so frames must not straddle its reads.
    @Option(help: "Message size in bytes (122: one client frame per 128-byte read of the C server).") var size = 122
    @Option(help: "Messages in flight (published, not yet at every subscriber).") var window = 64
    @Option(help: "Which servers to measure.") var target: Target = .both
    @Option(help: "Rounds per server, alternating servers.") var rounds = 1
    @Option(help: "How our mirror server's events reach its broadcasting code.")
    var delivery: MirrorServerCommand.Delivery = .handler
    @Option(help: "libwebsockets' test server (Debian package libwebsockets-test-server).")
    var lwsServer = "/usr/bin/libwebsockets-test-server"

    func run() async throws {
        let parameters = FanOutClient.Parameters(
            subscribers: subscribers, messages: messages, size: size, window: window)
        print(
            "fan-out: 1 publisher, \(subscribers) subscribers, \(messages) messages of \(size) bytes, window \(window)")
        var best: [String: Double] = [:]
        for round in 1...rounds {
            for server in servers() {
                let port = try FreePort.find()
                let process = try ServerProcess(
                    name: server.name, executable: server.executable, arguments: server.arguments(port), port: port)
                defer { process.stop() }
                let result = try await FanOutClient(parameters).run(port: port, subprotocol: "lws-mirror-protocol")
                let latency = result.latencyMicroseconds
                print(
                    String(
                        format:
                            "round %d %-26@ %10.0f deliveries/s  latency µs p50 %llu p90 %llu p99 %llu p99.9 %llu max %llu%@",
                        round, server.name as NSString, result.deliveriesPerSecond,
                        latency.valueAtPercentile(50), latency.valueAtPercentile(90), latency.valueAtPercentile(99),
                        latency.valueAtPercentile(99.9), latency.max,
                        Self.problems(result) as NSString))
                best[server.name] = max(best[server.name] ?? 0, result.deliveriesPerSecond)
            }
        }
        if let ours = best[Self.oursName(delivery)], let theirs = best[Self.lwsName] {
            print(String(format: "ours / lws (best rounds): %.1f%%", 100 * ours / theirs))
        }
    }

    private static func problems(_ result: FanOutClient.Result) -> String {
        var problems: [String] = []
        if result.unexpectedCloses > 0 { problems.append("\(result.unexpectedCloses) unexpected closes") }
        if result.malformed > 0 { problems.append("\(result.malformed) malformed messages: run aborted") }
        return problems.isEmpty ? "" : "  (" + problems.joined(separator: ", ") + ")"
    }

    private static let lwsName = "lws C mirror server"
    private static func oursName(_ delivery: MirrorServerCommand.Delivery) -> String { "ours (\(delivery.rawValue))" }

    private func servers() -> [(name: String, executable: String, arguments: (Int) -> [String])] {
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let delivery = delivery
        let ours = (
            name: Self.oursName(delivery), executable: me,
            arguments: { (port: Int) in ["mirror-server", "--port", String(port), "--delivery", delivery.rawValue] }
        )
        // -d 1: errors only, so that logging does not weigh on the C server.
        let lws = (
            name: Self.lwsName, executable: lwsServer,
            arguments: { (port: Int) in ["--port=\(port)", "-d", "1"] }
        )
        switch target {
        case .both: return [lws, ours]
        case .ours: return [ours]
        case .lws: return [lws]
        }
    }
}
