import ArgumentParser

/// `tablecast load`'s options for how the load changes over time: stages, churn, the pace of new connections and
/// their source addresses.
struct LoadDriveOptions: ParsableArguments {
    @Option(
        name: .customLong("stage"),
        help: ArgumentHelp(
            "A stage (repeatable, run in order): over DURATION (500ms, 30s, 2m, 1h) ramp linearly to SUBSCRIBERS "
                + "connected and RATE intents/s over the writers, from where the stage before ended (the first "
                + "from 0 subscribers and 0 intents/s; a stage with the same values holds them). Replaces "
                + "--duration, --subscribers and --rate.",
            valueName: "duration:subscribers:rate"),
        transform: { try LoadPlan.Stage(parsing: $0) })
    var stages: [LoadPlan.Stage] = []

    @Option(
        help:
            "Subscribers leaving per second, in turn: closing with a close frame, dropping the connection without one, and dropping it and resuming with since (catching up with the updates missed; the report times it). Others join to keep the count."
    )
    var churn: Double = 0

    @Option(help: "With --stage or --churn: new subscriber connections opened per second at most.")
    var connectRate: Double = 500

    @Option(help: "With --stage or --churn: subscriber connections in their handshake (and subscribe) at once at most.")
    var handshakes = 100

    @Option(
        help: ArgumentHelp(
            "Subscribers connect from N loopback source addresses (127.0.0.1, 127.0.0.2, …; all of 127.0.0.0/8 is "
                + "on Linux's loopback interface), or auto: one per 10,000 subscribers. Each source address has "
                + "only the ephemeral port range (about 28,000 ports) toward one server. Needs a loopback --url.",
            valueName: "N|auto"))
    var sourceAddresses: String?

    @Flag(help: "Print the plan's subscribers and intents/s every second (CSV: t,subscribers,rate) and exit.")
    var planOnly = false

    /// Connections per source address that `auto` plans for.
    static let connectionsPerAddress = 10_000

    func validate() throws {
        guard churn >= 0, churn.isFinite, connectRate > 0, handshakes >= 1 else {
            throw ValidationError("--churn must be ≥ 0, --connect-rate > 0 and --handshakes ≥ 1")
        }
        if let sourceAddresses, sourceAddresses != "auto" {
            guard let count = Int(sourceAddresses), (1...65_000).contains(count) else {
                throw ValidationError("--source-addresses '\(sourceAddresses)': give a count (1–65000) or auto")
            }
        }
    }

    /// The plan of a run that has one (stages or churn); `nil` for a run with fixed subscribers and rate.
    func plan(subscribers: Int, rate: Double, seconds: Double) -> LoadPlan? {
        if !stages.isEmpty { return LoadPlan(stages: stages) }
        if churn > 0 { return .constant(subscribers: subscribers, rate: rate, seconds: seconds) }
        return nil
    }

    /// How many source addresses subscribers connect from for `subscribers` at most; `nil` without the option.
    func addressCount(subscribers: Int) -> Int? {
        guard let sourceAddresses else { return nil }
        if let count = Int(sourceAddresses) { return count }
        return max(1, (subscribers + Self.connectionsPerAddress - 1) / Self.connectionsPerAddress)
    }

    /// The `index`-th loopback address: 127.0.0.1 … 127.0.0.254, then 127.0.1.1 …
    static func loopbackAddress(_ index: Int) -> String {
        "127.0.\(index / 254).\(index % 254 + 1)"
    }

    /// Whether `host` (of a server URL) is on this machine's loopback, which any 127.x source address reaches.
    static func isLoopback(_ host: String) -> Bool {
        host.hasPrefix("127.") || host == "localhost"
    }
}
