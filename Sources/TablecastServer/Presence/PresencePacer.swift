/// When a table's `presence` deltas go out: at most one per interval (given with the news, as it may grow with the
/// audience); news that come sooner wait for the interval to be over and go out together. Time is given, never read,
/// so tests step it.
struct PresencePacer<Instant: InstantProtocol> where Instant.Duration == Duration {
    /// What to do with the news there are now.
    enum Decision: Equatable {
        /// Send the delta now (and report it with ``sent(at:)``).
        case sendNow
        /// Wake up after this long and ask again (see ``woke()``).
        case wait(Duration)
        /// A wake-up is already scheduled: it will take these news too.
        case waiting
    }

    private var lastSent: Instant?
    private var wakeUpScheduled = false

    /// There is news at `now`, and `interval` is the shortest time between two deltas.
    mutating func news(at now: Instant, interval: Duration) -> Decision {
        guard !wakeUpScheduled else { return .waiting }
        guard let lastSent, lastSent.duration(to: now) < interval else { return .sendNow }
        wakeUpScheduled = true
        return .wait(interval - lastSent.duration(to: now))
    }

    /// A delta went out at `now`.
    mutating func sent(at now: Instant) {
        lastSent = now
    }

    /// The scheduled wake-up came: ask again with ``news(at:)`` if there is news.
    mutating func woke() {
        wakeUpScheduled = false
    }
}
