/// Exponential backoff with jitter: the n-th consecutive failed attempt waits a random time between half and all
/// of `min(maximum, initial × 2ⁿ)`, so that clients dropped together do not come back together.
public struct Backoff: Hashable, Sendable {
    /// The ceiling of the first delay.
    public var initial: Duration
    /// The largest ceiling.
    public var maximum: Duration

    /// - Parameters:
    ///   - initial: default 100 ms.
    ///   - maximum: default 10 s.
    public init(initial: Duration = .milliseconds(100), maximum: Duration = .seconds(10)) {
        self.initial = initial
        self.maximum = maximum
    }

    /// The delay before retry number `attempt` (0 for the first retry).
    public func delay(attempt: Int) -> Duration {
        var random = SystemRandomNumberGenerator()
        return delay(attempt: attempt, using: &random)
    }

    /// The delay before retry number `attempt`, its jitter drawn from `random` (a seeded one replays a run).
    func delay(attempt: Int, using random: inout some RandomNumberGenerator) -> Duration {
        ceiling(attempt: attempt) * Double.random(in: 0.5...1.0, using: &random)
    }

    /// The longest delay before retry number `attempt`.
    func ceiling(attempt: Int) -> Duration {
        min(maximum, initial * (1 << min(attempt, 30)))
    }
}
