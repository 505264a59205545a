import ArgumentParser
import TableModel

extension LoadCommand {
    /// Prints the report of a run (or of its workers' merged) and exits as its convergence and thresholds say; a
    /// worker sends its outcome to its coordinator instead.
    func finish(_ outcome: LoadOutcome, stats: LoadStats, plan: LoadPlan?) throws {
        if let link = LoadWorkerLink.current { return try link.send("result", outcome) }
        let (sendingSeconds, deliverySeconds, failures) = (
            outcome.sendingSeconds, outcome.deliverySeconds, outcome.failures
        )
        let report = LoadReport(
            stats: stats, sendingSeconds: sendingSeconds, deliverySeconds: deliverySeconds, failures: failures,
            replicasCompared: outcome.replicasCompared,
            requestedRate: drive.stages.isEmpty ? rate : plan?.meanRate ?? 0,
            settings: [
                "url": .string(servers.joined(separator: ",")), "tables": .array(tables.map(JSONValue.string)),
                "subscribers": .number(Double(subscribers)), "writers": .number(Double(writers)),
                "mix": .string((try? IntentMix(parsing: mix))?.description ?? mix),
                "rate": .number(rate), "inFlight": .number(Double(inFlight)), "stale": .bool(stale),
                "base": .string(base.rawValue),
                "writersSubscribe": .bool(writersSubscribe), "rawWriters": .bool(rawWriters),
                "optimistic": .bool(optimistic),
                "windowUntil": .string(windowUntil.rawValue),
                "replicas": .number(Double(replicas.map { min($0, subscribers) } ?? subscribers)),
            ].merging(driveSettings) { $1 }, series: outcome.series,
            server: outcome.server.flatMap { $0.count == 2 ? (name: $0[0], version: $0[1]) : nil },
            serverCPUSeconds: outcome.serverCPUSeconds)
        if let warning = report.rateWarning { Output.error("tablecast load: warning: \(warning)") }
        let verdicts = thresholds.map { ($0, $0.verdict(in: report.json)) }
        print(json ? report.json(with: verdicts).jsonText : report.text(with: verdicts))
        try output.write(report, verdicts: verdicts)
        if !failures.isEmpty { throw ExitCode(1) }
        let failed = verdicts.filter { !$0.1.holds }
        if !failed.isEmpty {
            Output.error("tablecast load: thresholds failed: " + failed.map(\.0.description).joined(separator: ", "))
            throw ExitCode(99)
        }
    }
}
