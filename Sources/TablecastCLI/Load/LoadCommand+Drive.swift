import ArgumentParser
import Foundation
import TableModel
import TablecastClient

/// The clients of a load run, and the parts of it that follow a plan (`--stage`, `--churn`).
extension LoadCommand {
    /// A load client's settings: the servers from the `index`-th, no presence.
    func clientConfiguration(_ id: String, _ index: Int, run: Substring) -> TablecastClient.Configuration {
        var configuration = TablecastClient.Configuration(url: servers(from: index), clientID: "load-\(run)-\(id)")
        configuration.observesPresence = false
        return configuration
    }

    /// Subscriber `index` (its table is the index's among `tables`): it counts each delivery and its latency,
    /// keeps a replica unless --replicas says otherwise, and binds the source address --source-addresses gives it.
    func subscriber(
        _ index: Int, tables: [String], run: Substring, transport: TablecastTransport, stats: LoadStats,
        deliveries: DeliveryWindow?, also: (@Sendable (TablecastClient.Event) -> Void)? = nil
    ) throws -> TablecastClient {
        var settings = clientConfiguration("s\(index)", index + 1, run: run)
        // Joiners take ever higher indices (--stage, --churn): the first K of every --subscribers keep replicas.
        settings.keepsReplicas = replicas.map { index % max(1, subscribers) < $0 } ?? true
        // Thousands of subscribers: a hop to each one's queue per update cost more than decoding it.
        settings.handlesOnTransportThread = true
        if let addresses = drive.addressCount(subscribers: subscribers) {
            settings.localAddress = LoadDriveOptions.loopbackAddress(index % addresses)
        }
        // Updates that come with a (re)subscribe's catch-up waited for it: they are not timed as deliveries.
        let caughtUp = AtomicFlag()
        let track = stats.connections.tracker()
        return try TablecastClient(
            configuration: settings, transport: transport,
            onEvent: { event in
                switch event {
                case .update(let update, _):
                    stats.recordDelivery(originRef: update.originRef, subscriber: index, timed: caughtUp.isSet)
                    if let deliveries, let ref = update.originRef { deliveries.answered(ref) }
                case .updateSeen(_, _, _, let ref):
                    stats.recordDelivery(originRef: ref, subscriber: index, timed: caughtUp.isSet)
                    if let deliveries, let ref { deliveries.answered(ref) }
                default:
                    if case .subscribed = event { caughtUp.set(true) }
                    if case .state(.connecting) = event { caughtUp.set(false) }
                    track(event)
                }
                also?(event)
            })
    }

    /// The subscribers that follow `plan`: slot i is subscriber i (a joiner takes the next slot).
    func subscribers(
        following plan: LoadPlan, tables: [String], run: Substring, transport: TablecastTransport, stats: LoadStats
    ) -> LoadSubscribers {
        LoadSubscribers(
            stats: stats, handshakes: drive.handshakes, connectRate: drive.connectRate, churn: drive.churn,
            timeout: .milliseconds(Int(timeout * 1000))
        ) { slot, onEvent in
            let table = tables[slot % tables.count]
            let client = try self.subscriber(
                slot, tables: tables, run: run, transport: transport, stats: stats, deliveries: nil, also: onEvent)
            return (client, table)
        }
    }

    /// Checks the options of a planned run (`--stage`, `--churn`, `--source-addresses`) against the others.
    func validatePlan() throws {
        guard fleet.workers >= 1, fleet.remoteWorkers >= 0 else {
            throw ValidationError("--workers must be ≥ 1 and --remote-workers ≥ 0")
        }
        let total = fleet.workers + fleet.remoteWorkers
        if total > 1, writers < total {
            throw ValidationError("--workers: each worker needs a writer (--writers ≥ \(total))")
        }
        if !drive.stages.isEmpty, subscribersFlag != nil || durationFlag != nil || rateFlag != nil || count != nil {
            throw ValidationError("--stage replaces --duration, --subscribers, --rate and --count: give stages only")
        }
        if !drive.stages.isEmpty || drive.churn > 0, rawWriters || serverPid != nil {
            throw ValidationError(
                "--stage and --churn change the subscribers during the run: not with --raw-writers or --server-pid")
        }
        if drive.churn > 0, count != nil {
            throw ValidationError("--churn runs for --duration: not with --count")
        }
        if drive.sourceAddresses != nil {
            for server in url.split(separator: ",") {
                let host = (try? TablecastClient.parse(String(server)))?.host ?? ""
                guard LoadDriveOptions.isLoopback(host) else {
                    throw ValidationError(
                        "--source-addresses binds loopback addresses (127.0.0.x): \(server) is not on loopback")
                }
            }
        }
    }

    /// The report's settings for stages, churn and source addresses.
    var driveSettings: [String: JSONValue] {
        [
            "stages": .array(drive.stages.map { .string($0.description) }), "churn": .number(drive.churn),
            "sourceAddresses": drive.addressCount(subscribers: subscribers).map { .number(Double($0)) } ?? .null,
        ]
    }

    /// Prints the plan every second for --plan-only: `t,subscribers,rate`.
    func printPlan(_ plan: LoadPlan) {
        print("t,subscribers,rate")
        for row in plan.table(step: 1) {
            print("\(format(row.t)),\(row.subscribers),\(String(format: "%.3f", row.rate))")
        }
    }
}

/// When a paced writer sends: every writers/rate seconds, the rate being --rate or the plan's at the moment.
struct LoadPacing: Sendable {
    let plan: LoadPlan?
    let rate: Double
    let writers: Int
    let start: ContinuousClock.Instant

    /// The wait between one writer's intents at `instant`; `nil` while the rate is 0 (nothing to send).
    func interval(at instant: ContinuousClock.Instant) -> Duration? {
        let rate = plan.map { $0.rate(at: Double((instant - start) / .milliseconds(1)) / 1000) } ?? rate
        return rate > 0 ? .nanoseconds(Int(1e9 * Double(writers) / rate)) : nil
    }
}
