/// A token bucket: `rate` tokens per second, holding at most `burst`. Time is passed in (seconds from any fixed
/// origin), so the bucket is a pure value and tests drive it without a clock.
public struct TokenBucket: Sendable {
    /// Tokens added per second.
    public let rate: Double
    /// The most tokens the bucket holds: how many requests may arrive at once after a quiet spell.
    public let burst: Double
    private var tokens: Double
    private var last: Double?

    /// A full bucket.
    public init(rate: Double, burst: Double) {
        precondition(rate > 0 && burst >= 1, "a token bucket needs a positive rate and a burst of at least 1")
        self.rate = rate
        self.burst = burst
        self.tokens = burst
    }

    /// Takes one token at time `now` if there is one; returns whether it was taken.
    public mutating func take(now: Double) -> Bool {
        if let last {
            // A clock that steps back adds nothing rather than taking tokens away.
            if now > last {
                tokens = min(burst, tokens + (now - last) * rate)
                self.last = now
            }
        } else {
            last = now
        }
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
