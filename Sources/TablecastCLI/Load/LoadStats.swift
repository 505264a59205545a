import Dispatch
import Histogram
import Synchronization
import TablecastProtocol

/// Counters and latency histograms shared by every writer and subscriber of a load run. Each latency goes into the
/// run's histogram and into the current second's, which the series' sampler takes (`takeInterval()`).
final class LoadStats: Sendable {
    let sent = Atomic<Int>(0)
    let acked = Atomic<Int>(0)
    let noops = Atomic<Int>(0)
    let deliveries = Atomic<Int>(0)
    let errorCount = Atomic<Int>(0)
    /// Send slots of paced writers (--rate) that passed while they waited for acks: intents asked for, not sent.
    let missedSlots = Atomic<Int>(0)
    /// Intents still to send (with --count; otherwise practically unbounded).
    let remaining: Atomic<Int>
    /// The uptime (ns) of the last delivery, for the delivery rate.
    let lastDelivery = Atomic<UInt64>(0)
    /// The connections live now.
    let connections = ConnectionGauge()
    /// Subscribers that connected and subscribed during the run, and that failed to (with --stage or --churn).
    let subscribersOpened = Atomic<Int>(0)
    let subscribeFailures = Atomic<Int>(0)
    /// Subscribers that left: closed with a close frame, or dropped without one (--churn, or ramping down).
    let cleanCloses = Atomic<Int>(0)
    let abruptCloses = Atomic<Int>(0)
    /// Churned subscribers that dropped their connection and resumed: caught up with the updates they missed, or
    /// with a snapshot (the server no longer had them).
    let resumes = Atomic<Int>(0)
    let resumesBySnapshot = Atomic<Int>(0)
    private let errors = Mutex<[String: Int]>([:])
    private let resumeLatency = Mutex(LoadStats.histogram())
    private let ackLatency = Mutex(Latencies())
    private let ownScreenLatency = Mutex(LoadStats.histogram())
    /// Delivery latencies, sharded by subscriber so that concurrent subscribers rarely share a lock.
    private let shards: [Shard]
    /// The ref prefix of this run's writers, whose refs carry their send time.
    let refMarker: String
    /// The prefix of the refs this process makes (the run's marker, then a worker's own tag): deliveries of these
    /// are timed, since their send times are on this process's clock; other workers' are counted only.
    let ownMarker: String
    /// Every latency sample as recorded (µs) by kind, kept only for --raw-samples (a test's check of the merge).
    private let rawSamples: Mutex<[String: [UInt64]]>?

    private final class Shard: Sendable {
        let latencies = Mutex(Latencies())
    }

    /// The run's latencies and the current interval's.
    private struct Latencies {
        var total = LoadStats.histogram()
        var interval = LoadStats.intervalHistogram()

        mutating func record(_ micros: UInt64) {
            total.record(micros)
            interval.record(micros)
        }

        /// The interval's histogram, replaced by `fresh` (made outside the lock).
        mutating func takeInterval(leaving fresh: inout Histogram<UInt64>) {
            swap(&interval, &fresh)
        }
    }

    init(refMarker: String, workerTag: String = "", budget: Int, shards: Int = 16, keepsRawSamples: Bool = false) {
        self.refMarker = refMarker
        ownMarker = workerTag.isEmpty ? refMarker : "\(refMarker)\(workerTag)."

        rawSamples = keepsRawSamples ? Mutex([:]) : nil
        remaining = Atomic(budget)
        self.shards = (0..<shards).map { _ in Shard() }
    }

    /// Latencies are recorded up to a minute; longer ones as a minute.
    static let maximumMicroseconds: UInt64 = 60_000_000

    /// Microseconds, up to a minute, three significant digits.
    static func histogram() -> Histogram<UInt64> {
        Histogram<UInt64>(
            lowestDiscernibleValue: 1, highestTrackableValue: maximumMicroseconds,
            numberOfSignificantValueDigits: .three)
    }

    /// A second's latencies: microseconds, up to a minute, two significant digits (1 %), which is plenty for a
    /// second's percentiles and keeps an hour's series small (a second spread over 0.1–30 ms fills at most a
    /// thousand buckets, where three digits would fill six thousand).
    static func intervalHistogram() -> Histogram<UInt64> {
        Histogram<UInt64>(
            lowestDiscernibleValue: 1, highestTrackableValue: maximumMicroseconds, numberOfSignificantValueDigits: .two)
    }

    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// A ref that carries its send time: `<marker><writer>.<sequence>.<uptime ns>`.
    func ref(writer: Int, sequence: Int, sentAt: UInt64) -> String { "\(ownMarker)\(writer).\(sequence).\(sentAt)" }

    /// Microseconds from `start` to `end` (uptime ns), at most a minute; kept as a raw sample of `kind` with
    /// --raw-samples.
    private func latency(_ kind: String, from start: UInt64, to end: UInt64 = LoadStats.now()) -> UInt64 {
        let micros = min((end &- start) / 1000, Self.maximumMicroseconds)
        rawSamples?.withLock { $0[kind, default: []].append(micros) }
        return micros
    }

    /// An optimistic writer's own predicted table shows its intent.
    func recordOwnScreen(sentAt: UInt64) {
        let micros = latency("ownScreen", from: sentAt)
        ownScreenLatency.withLock { _ = $0.record(micros) }
    }

    func recordAck(sentAt: UInt64, noop: Bool) {
        acked.add(1, ordering: .relaxed)
        if noop { noops.add(1, ordering: .relaxed) }
        let micros = latency("ack", from: sentAt)
        ackLatency.withLock { $0.record(micros) }
    }

    /// A resumed subscriber caught up (`subscribed` after its reconnect): the time since its new connection began.
    func recordResume(reconnectedAt: UInt64, bySnapshot: Bool) {
        resumes.add(1, ordering: .relaxed)
        if bySnapshot { resumesBySnapshot.add(1, ordering: .relaxed) }
        let micros = latency("resume", from: reconnectedAt)
        resumeLatency.withLock { _ = $0.record(micros) }
    }

    func recordError(_ code: String) {
        errorCount.add(1, ordering: .relaxed)
        errors.withLock { $0[code, default: 0] += 1 }
    }

    /// A subscriber received an update; its origin ref says when the intent was sent. Only this run's intents
    /// count: a subscriber of a table that already has history may first be sent earlier updates to catch up
    /// (a shared snapshot plus what followed it), and those are not deliveries of this run. An update of this run
    /// that came with a subscribe's catch-up (`timed` false) is counted but not timed: it waited for the
    /// subscribe, not the fan-out.
    func recordDelivery(originRef: String?, subscriber: Int, timed: Bool = true) {
        guard let ref = originRef, Self.ref(ref, startsWith: refMarker) else { return }
        deliveries.add(1, ordering: .relaxed)
        let now = Self.now()
        lastDelivery.store(now, ordering: .relaxed)
        guard timed, Self.ref(ref, startsWith: ownMarker), let sentAt = Self.sendTime(in: ref) else { return }
        let micros = latency("delivery", from: sentAt, to: now)
        shards[subscriber % shards.count].latencies.withLock { $0.record(micros) }
    }

    /// Whether `ref` begins with `marker`, compared on their UTF-8 bytes in place: `starts(with:)` on two UTF-8
    /// views walked them through their indices, ~650 instructions each time, twice for every delivery.
    static func ref(_ ref: String, startsWith marker: String) -> Bool {
        var (ref, marker) = (ref, marker)
        return ref.withUTF8 { ref in marker.withUTF8 { ref.starts(with: $0) } }
    }

    /// The number after a ref's last dot, read from its UTF-8 bytes in place: this runs for every delivery, and
    /// Character based searching was a tenth of the load generator's time (walking the UTF-8 view's indices
    /// backwards, ~700 instructions a ref).
    static func sendTime(in ref: String) -> UInt64? {
        var ref = ref
        return ref.withUTF8 { bytes in
            var value: UInt64 = 0
            var multiplier: UInt64 = 1
            for byte in bytes.reversed() {
                if byte == UInt8(ascii: ".") { return multiplier > 1 ? value : nil }
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), multiplier <= 1_000_000_000_000_000_000
                else { return nil }
                value += UInt64(byte - UInt8(ascii: "0")) * multiplier
                multiplier = multiplier &* 10
            }
            return nil
        }
    }

    var errorsByCode: [String: Int] { errors.withLock { $0 } }
    var ackHistogram: Histogram<UInt64> { ackLatency.withLock { $0.total } }
    var ownScreenHistogram: Histogram<UInt64> { ownScreenLatency.withLock { $0 } }
    var resumeHistogram: Histogram<UInt64> { resumeLatency.withLock { $0 } }

    /// The counts of subscribers that came and went, under the JSON report's names, in the text report's order.
    var subscriberCounts: [(name: String, count: Int)] {
        [
            ("opened", subscribersOpened.load(ordering: .relaxed)),
            ("failed", subscribeFailures.load(ordering: .relaxed)),
            ("closedClean", cleanCloses.load(ordering: .relaxed)),
            ("closedAbrupt", abruptCloses.load(ordering: .relaxed)),
            ("resumed", resumes.load(ordering: .relaxed)),
            ("resumedBySnapshot", resumesBySnapshot.load(ordering: .relaxed)),
        ]
    }
    var deliveryHistogram: Histogram<UInt64> {
        var merged = Self.histogram()
        for shard in shards { shard.latencies.withLock { merged.add($0.total) } }
        return merged
    }

    /// The latencies recorded since the last call (or the start), each lock held only for a swap.
    func takeInterval() -> (ack: Histogram<UInt64>, delivery: Histogram<UInt64>) {
        var ack = Self.intervalHistogram()
        ackLatency.withLock { $0.takeInterval(leaving: &ack) }
        var delivery = Self.intervalHistogram()
        for shard in shards {
            var taken = Self.intervalHistogram()
            shard.latencies.withLock { $0.takeInterval(leaving: &taken) }
            delivery.add(taken)
        }
        return (ack, delivery)
    }

    /// The raw samples kept with --raw-samples, by kind (`delivery`, `ack`, `ownScreen`, `resume`).
    var raw: [String: [UInt64]] { rawSamples?.withLock { $0 } ?? [:] }
}

extension LoadStats {
    /// Every count and histogram of a run, as a worker sends them to its coordinator, which adds them up:
    /// HDR histograms of the same settings add exactly, bucket by bucket.
    struct Snapshot: Codable, Sendable {
        var counts: [String: Int]
        var errors: [String: Int]
        var histograms: [String: Histogram<UInt64>]
    }

    /// Calls `body` with each counter a snapshot carries, under its name.
    private func forEachCounter(_ body: (String, borrowing Atomic<Int>) -> Void) {
        body("sent", sent)
        body("acked", acked)
        body("noops", noops)
        body("deliveries", deliveries)
        body("errorCount", errorCount)
        body("missedSlots", missedSlots)
        body("subscribersOpened", subscribersOpened)
        body("subscribeFailures", subscribeFailures)
        body("cleanCloses", cleanCloses)
        body("abruptCloses", abruptCloses)
        body("resumes", resumes)
        body("resumesBySnapshot", resumesBySnapshot)
    }

    var snapshot: Snapshot {
        var counts: [String: Int] = [:]
        forEachCounter { name, counter in counts[name] = counter.load(ordering: .relaxed) }
        return Snapshot(
            counts: counts, errors: errorsByCode,
            histograms: [
                "ack": ackHistogram, "ownScreen": ownScreenHistogram, "delivery": deliveryHistogram,
                "resume": resumeHistogram,
            ])
    }

    /// Adds a worker's counts and histograms to these.
    func merge(_ other: Snapshot) {
        forEachCounter { name, counter in counter.add(other.counts[name] ?? 0, ordering: .relaxed) }
        errors.withLock { $0.merge(other.errors, uniquingKeysWith: +) }
        for (name, histogram) in other.histograms {
            switch name {
            case "ack": ackLatency.withLock { $0.total.add(histogram) }
            case "ownScreen": ownScreenLatency.withLock { $0.add(histogram) }
            case "resume": resumeLatency.withLock { $0.add(histogram) }
            case "delivery": shards[0].latencies.withLock { $0.total.add(histogram) }
            default: break
            }
        }
    }
}
