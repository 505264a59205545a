import CoreMetrics
import Foundation
import Prometheus

/// The executable's choice of metrics backend: the libraries record through swift-metrics, and `tablecast serve`
/// collects it all in one Prometheus registry that `/metrics` renders.
enum PrometheusBackend {
    /// Bootstraps the process' `MetricsSystem` (once) and returns what `/metrics` serves: the registry's text with
    /// a `# HELP` line from `descriptions` before each series' `# TYPE` line (swift-metrics' API carries no help
    /// text, so the registry writes none).
    static func bootstrap(descriptions: [String: String]) -> @Sendable () -> [UInt8] {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // Commits take from ~100 µs (fsync on a fast disk) to a second (a stalled one).
        factory.durationHistogramBuckets["tablecast_commit_seconds"] = [
            .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .microseconds(2500),
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(100), .seconds(1),
        ]
        factory.valueHistogramBuckets["tablecast_commit_group_size"] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 1024]
        MetricsSystem.bootstrap(factory)
        return { withHelp(registry.emitToBuffer(), descriptions) }
    }

    /// `exposition` with `# HELP name text` inserted before each `# TYPE name …` line whose name has a description.
    static func withHelp(_ exposition: [UInt8], _ descriptions: [String: String]) -> [UInt8] {
        let typePrefix = Array("# TYPE ".utf8)
        var result: [UInt8] = []
        result.reserveCapacity(exposition.count + descriptions.count * 80)
        for line in exposition.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            if line.starts(with: typePrefix) {
                let name = line.dropFirst(typePrefix.count).prefix { $0 != UInt8(ascii: " ") }
                if let text = descriptions[String(decoding: name, as: UTF8.self)] {
                    result += Array("# HELP ".utf8) + name + Array(" \(escaped(text))\n".utf8)
                }
            }
            result += line
            result.append(UInt8(ascii: "\n"))
        }
        // The loop ends every piece with a line feed, the last one too, which the text did not have after it.
        result.removeLast()
        return result
    }

    /// Help text as the exposition format wants it: backslashes and line feeds escaped.
    private static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
    }
}
