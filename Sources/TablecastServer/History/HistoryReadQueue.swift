import Foundation
import WebSocketTransport

/// Decides which waiting `history` or `snapshotAt` request a free reader takes next, so that one connection's or
/// one principal's flood cannot delay another's: a pure value, driven with the time passed in (seconds from any
/// fixed origin), like ``TokenBucket``.
///
/// - Paced by cost: each connection and each principal carries the reader time its requests took, decaying by half
///   every ``Settings/halfLife``. A connection above ``Settings/maxConnectionCost`` (a principal above
///   ``Settings/maxPrincipalCost``; none without tokens, where every client shares the empty principal) waits until
///   it decays below; ``wakeTime(now:)`` says when.
/// - Cheapest first: among the rest, the principal that used least goes first, then the read expected to be
///   shortest (each table's and each connection's reads are averaged as they finish), then the connection that
///   used least, then the oldest.
/// - A light lane: a reader kept for reads expected to take less than ``Settings/lightCost`` takes only those
///   (``next(now:lightOnly:)``), so that a cheap read waits for at most one other cheap read however busy the other
///   readers are with expensive ones.
/// - One at a time: a connection's next request waits until its previous reply was written to its socket, so a
///   reader that does not read gets one reply computed, not a queue of them.
struct HistoryReadQueue<Request> {
    struct Settings {
        var halfLife = 1.0
        /// Reader seconds a connection may have used recently (about 0.35 s per second when steady).
        var maxConnectionCost = 0.5
        /// Reader seconds a principal may have used recently (about 0.7 s per second when steady).
        var maxPrincipalCost = 1.0
        /// A read expected to take less than this (its table's and its connection's average) may use the light lane.
        var lightCost = 0.02
        /// The weight of the latest read in the averages.
        var averaging = 0.25
    }

    private struct Waiting {
        var request: Request
        var table: String
        var connection: WebSocketConnectionID
        var principal: String
        var arrival: UInt64
    }

    /// A cost that halves every `halfLife`.
    private struct DecayingCost {
        var value: Double
        var at: Double

        func value(at now: Double, halfLife: Double) -> Double {
            value * exp2(-(now - at) / halfLife)
        }
    }

    private enum Payer: Hashable {
        case connection(WebSocketConnectionID)
        case principal(String)
    }

    let settings: Settings
    private var waiting: [Waiting] = []
    private var costs: [Payer: DecayingCost] = [:]
    /// How long each connection's reads take, on average.
    private var connectionAverages: [WebSocketConnectionID: Double] = [:]
    /// How long each table's reads take, on average (the few hundred most recently read tables).
    private var tableAverages: [String: Double] = [:]
    /// Connections whose reply has not been written yet (or whose request is being answered).
    private var busy: Set<WebSocketConnectionID> = []
    private var arrivals: UInt64 = 0

    init(settings: Settings = Settings()) {
        self.settings = settings
    }

    /// Requests waiting for a reader.
    var count: Int { waiting.count }

    /// Takes every waiting request out (the server shuts down).
    mutating func removeAll() -> [Request] {
        defer { waiting.removeAll() }
        return waiting.map(\.request)
    }

    /// Queues `connection`'s read of `table`.
    mutating func add(_ request: Request, table: String, connection: WebSocketConnectionID, principal: String) {
        arrivals += 1
        waiting.append(
            Waiting(request: request, table: table, connection: connection, principal: principal, arrival: arrivals))
    }

    /// The request a free reader should take now, if any may go; its connection is busy until ``replyWritten(_:)``.
    /// `lightOnly`: the reader is the light lane, which takes only connections whose last read was cheap.
    mutating func next(
        now: Double, lightOnly: Bool = false
    ) -> (request: Request, table: String, connection: WebSocketConnectionID, principal: String)? {
        var best: (index: Int, key: (Double, Double, Double, UInt64))?
        for (index, candidate) in waiting.enumerated() where !busy.contains(candidate.connection) {
            let connectionCost = cost(.connection(candidate.connection), now: now)
            let principalCost = candidate.principal.isEmpty ? 0 : cost(.principal(candidate.principal), now: now)
            guard connectionCost <= settings.maxConnectionCost, principalCost <= settings.maxPrincipalCost else {
                continue
            }
            let expected = max(connectionAverages[candidate.connection] ?? 0, tableAverages[candidate.table] ?? 0)
            if lightOnly && expected >= settings.lightCost { continue }
            let key = (principalCost, expected, connectionCost, candidate.arrival)
            if best == nil || key < best!.key { best = (index, key) }
        }
        guard let best else { return nil }
        let chosen = waiting.remove(at: best.index)
        busy.insert(chosen.connection)
        return (chosen.request, chosen.table, chosen.connection, chosen.principal)
    }

    /// When a paced request may go (nil: none is waiting for its cost to decay).
    func wakeTime(now: Double) -> Double? {
        var earliest: Double?
        for candidate in waiting where !busy.contains(candidate.connection) {
            var wait = 0.0
            for (payer, limit) in [(Payer.connection(candidate.connection), settings.maxConnectionCost)]
                + (candidate.principal.isEmpty
                    ? [] : [(Payer.principal(candidate.principal), settings.maxPrincipalCost)])
            {
                let current = cost(payer, now: now)
                if current > limit { wait = max(wait, settings.halfLife * log2(current / limit)) }
            }
            if wait > 0 { earliest = min(earliest ?? .infinity, now + wait) }
        }
        return earliest
    }

    /// A reader finished a read of `table` by `connection` (of `principal`) that took `seconds` of reader time.
    mutating func finished(
        table: String, connection: WebSocketConnectionID, principal: String, seconds: Double, now: Double
    ) {
        connectionAverages[connection] = averaged(connectionAverages[connection], seconds)
        if tableAverages.count >= 512 && tableAverages[table] == nil { tableAverages.removeAll(keepingCapacity: true) }
        tableAverages[table] = averaged(tableAverages[table], seconds)
        charge(.connection(connection), seconds, now: now)
        if !principal.isEmpty { charge(.principal(principal), seconds, now: now) }
    }

    /// The reply to `connection`'s request was written (or dropped): its next request may go.
    mutating func replyWritten(_ connection: WebSocketConnectionID) {
        busy.remove(connection)
    }

    /// `connection` closed: its waiting request is dropped and its cost forgotten.
    /// `connection` closed: its waiting requests, which it returns, are dropped (their callers still wait for an
    /// answer), and what it cost is forgotten.
    mutating func remove(_ connection: WebSocketConnectionID) -> [Request] {
        let dropped = waiting.filter { $0.connection == connection }.map(\.request)
        waiting.removeAll { $0.connection == connection }
        busy.remove(connection)
        costs[.connection(connection)] = nil
        connectionAverages[connection] = nil
        return dropped
    }

    private func averaged(_ average: Double?, _ seconds: Double) -> Double {
        guard let average else { return seconds }
        return average + settings.averaging * (seconds - average)
    }

    private func cost(_ payer: Payer, now: Double) -> Double {
        costs[payer]?.value(at: now, halfLife: settings.halfLife) ?? 0
    }

    private mutating func charge(_ payer: Payer, _ seconds: Double, now: Double) {
        costs[payer] = DecayingCost(value: cost(payer, now: now) + seconds, at: now)
        // Costs decayed to nothing are forgotten, so the map holds only recent payers.
        if costs.count > 256 { costs = costs.filter { $0.value.value(at: now, halfLife: settings.halfLife) > 1e-6 } }
    }
}
