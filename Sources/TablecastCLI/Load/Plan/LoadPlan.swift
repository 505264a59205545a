import ArgumentParser

/// What a load run asks for over time: subscribers connected and intents per second, as `--stage`s (k6's stages).
/// Each stage ramps linearly from where the one before ended (the first from `start`) to its own values over its
/// duration; a stage with the values it starts from holds them. A pure value: the run asks it "how many subscribers,
/// what rate, at t".
struct LoadPlan: Sendable, Equatable {
    /// `DURATION:SUBSCRIBERS:RATE`, e.g. `30s:200:50`: reach 200 subscribers and 50 intents/s at the stage's end.
    struct Stage: Sendable, Equatable, CustomStringConvertible {
        let seconds: Double
        let subscribers: Int
        let rate: Double

        init(seconds: Double, subscribers: Int, rate: Double) {
            self.seconds = seconds
            self.subscribers = subscribers
            self.rate = rate
        }

        /// Parses `DURATION:SUBSCRIBERS:RATE`; DURATION is a number with `ms`, `s`, `m` or `h` (`500ms`, `30s`, `2m`).
        init(parsing text: String) throws {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 3 else {
                throw ValidationError("--stage '\(text)': expected DURATION:SUBSCRIBERS:RATE, e.g. 30s:200:50")
            }
            guard let seconds = Self.seconds(parts[0]), seconds > 0 else {
                throw ValidationError(
                    "--stage '\(text)': the duration '\(parts[0])' is not a positive number with ms, s, m or h")
            }
            guard let subscribers = Int(parts[1]), subscribers >= 0 else {
                throw ValidationError("--stage '\(text)': subscribers '\(parts[1])' is not a count ≥ 0")
            }
            guard let rate = Double(parts[2]), rate >= 0, rate.isFinite else {
                throw ValidationError("--stage '\(text)': the rate '\(parts[2])' is not a number of intents/s ≥ 0")
            }
            self.init(seconds: seconds, subscribers: subscribers, rate: rate)
        }

        /// `500ms`, `30s`, `2m`, `1h` (also `1.5s`) in seconds.
        static func seconds(_ text: String) -> Double? {
            for (suffix, scale) in [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)] where text.hasSuffix(suffix) {
                return Double(text.dropLast(suffix.count)).map { $0 * scale }.flatMap { $0.isFinite ? $0 : nil }
            }
            return nil
        }

        var description: String {
            let duration = seconds < 1 ? "\(Int((seconds * 1000).rounded()))ms" : "\(Self.number(seconds))s"
            return "\(duration):\(subscribers):\(Self.number(rate))"
        }

        private static func number(_ value: Double) -> String {
            value == value.rounded() ? String(Int(value)) : String(value)
        }
    }

    /// Where the first stage ramps from: 0 subscribers and 0 intents/s for `--stage`s; the fixed values otherwise.
    let start: (subscribers: Int, rate: Double)
    let stages: [Stage]

    init(start: (subscribers: Int, rate: Double) = (0, 0), stages: [Stage]) {
        self.start = start
        self.stages = stages
    }

    /// The run without stages: `subscribers` and `rate` from the start, for `seconds`.
    static func constant(subscribers: Int, rate: Double, seconds: Double) -> LoadPlan {
        LoadPlan(
            start: (subscribers, rate), stages: [Stage(seconds: seconds, subscribers: subscribers, rate: rate)])
    }

    static func == (lhs: LoadPlan, rhs: LoadPlan) -> Bool {
        lhs.start == rhs.start && lhs.stages == rhs.stages
    }

    /// The whole run.
    var seconds: Double { stages.reduce(0) { $0 + $1.seconds } }

    /// The most subscribers any moment asks for.
    var maxSubscribers: Int { stages.map(\.subscribers).reduce(start.subscribers, max) }

    /// The stage running at `t` seconds (the last one from its end on), with the values it ramps from and the
    /// fraction of it done.
    private func position(at t: Double) -> (from: (Double, Double), stage: Stage, done: Double)? {
        var from = (Double(start.subscribers), start.rate)
        var elapsed = 0.0
        for (index, stage) in stages.enumerated() {
            if t < elapsed + stage.seconds || index == stages.count - 1 {
                return (from, stage, min(1, max(0, (t - elapsed) / stage.seconds)))
            }
            elapsed += stage.seconds
            from = (Double(stage.subscribers), stage.rate)
        }
        return nil
    }

    /// Subscribers the plan asks for at `t` seconds (rounded to the nearest).
    func subscribers(at t: Double) -> Int {
        guard let (from, stage, done) = position(at: t) else { return start.subscribers }
        return Int((from.0 + (Double(stage.subscribers) - from.0) * done).rounded())
    }

    /// Intents per second the plan asks for at `t` seconds, over all writers.
    func rate(at t: Double) -> Double {
        guard let (from, stage, done) = position(at: t) else { return start.rate }
        return from.1 + (stage.rate - from.1) * done
    }

    /// Intents the plan asks for over the whole run (each linear ramp's area).
    var intents: Double {
        var from = start.rate
        var total = 0.0
        for stage in stages {
            total += (from + stage.rate) / 2 * stage.seconds
            from = stage.rate
        }
        return total
    }

    /// The mean rate over the run (what the report compares the reached rate with).
    var meanRate: Double { seconds > 0 ? intents / seconds : 0 }

    /// `t, subscribers, rate` every `step` seconds to the end: `--plan-only` prints it.
    func table(step: Double) -> [(t: Double, subscribers: Int, rate: Double)] {
        let count = Int((seconds / step).rounded(.down))
        return (0...count).map { i in
            let t = Double(i) * step
            return (t, subscribers(at: t), rate(at: t))
        }
    }
}
