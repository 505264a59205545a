import Foundation
import TablecastTesting
import XCTest

extension XCTestCase {
    /// Runs a randomized test with a fresh seed, or with `TABLECAST_SEED` to replay one; when anything failed it
    /// reports the seed so that the failure can be replayed.
    func withSeed(_ body: (inout SeededGenerator) throws -> Void) {
        let seed =
            ProcessInfo.processInfo.environment["TABLECAST_SEED"].flatMap(UInt64.init)
            ?? UInt64.random(in: 0...UInt64.max)
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
