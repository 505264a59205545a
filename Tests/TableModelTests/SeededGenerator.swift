import Foundation
import XCTest

/// SplitMix64: a tiny deterministic generator so that every randomized test can print and replay its seed.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension XCTestCase {
    /// Runs a randomized test with a fresh seed, or with `TABLECAST_SEED` to replay one; when anything failed it
    /// reports the seed so that the failure can be replayed.
    func withSeed(_ body: (inout SeededGenerator) throws -> Void) {
        let seed = ProcessInfo.processInfo.environment["TABLECAST_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
        var generator = SeededGenerator(seed: seed)
        let failuresBefore = testRun?.totalFailureCount ?? 0
        defer {
            if (testRun?.totalFailureCount ?? 0) > failuresBefore {
                XCTFail("replay with TABLECAST_SEED=\(seed)")
            }
        }
        do {
            try body(&generator)
        } catch {
            XCTFail("threw \(error)")
        }
    }
}
