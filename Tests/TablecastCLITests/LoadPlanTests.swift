import XCTest

@testable import TablecastCLI

/// `tablecast load --stage`: the plan as a value, "how many subscribers and what rate at t".
final class LoadPlanTests: XCTestCase {
    func testEachStageRampsLinearlyFromWhereTheOneBeforeEnded() throws {
        let plan = LoadPlan(
            stages: try ["10s:200:50", "30s:200:50", "5s:0:0"].map { try LoadPlan.Stage(parsing: $0) })
        XCTAssertEqual(plan.seconds, 45)
        XCTAssertEqual(plan.maxSubscribers, 200)
        // From 0 and 0: halfway up at 5 s, at the values from 10 s, held until 40 s, then down to 0 at 45 s.
        XCTAssertEqual(plan.subscribers(at: 0), 0)
        XCTAssertEqual(plan.rate(at: 0), 0)
        XCTAssertEqual(plan.subscribers(at: 5), 100)
        XCTAssertEqual(plan.rate(at: 5), 25)
        XCTAssertEqual(plan.subscribers(at: 10), 200)
        XCTAssertEqual(plan.subscribers(at: 39.9), 200)
        XCTAssertEqual(plan.rate(at: 39.9), 50)
        XCTAssertEqual(plan.subscribers(at: 42.5), 100)
        XCTAssertEqual(plan.rate(at: 42.5), 25, accuracy: 1e-9)
        XCTAssertEqual(plan.subscribers(at: 45), 0)
        XCTAssertEqual(plan.subscribers(at: 100), 0, "after the end: the last stage's values")
        // Intents asked for: the ramps' areas (250 + 1,500 + 125), over 45 s.
        XCTAssertEqual(plan.intents, 1875)
        XCTAssertEqual(plan.meanRate, 1875.0 / 45, accuracy: 1e-9)
    }

    func testAConstantPlanHoldsItsValuesFromTheStart() {
        let plan = LoadPlan.constant(subscribers: 12, rate: 30, seconds: 5)
        XCTAssertEqual(plan.subscribers(at: 0), 12)
        XCTAssertEqual(plan.rate(at: 2.5), 30)
        XCTAssertEqual(plan.subscribers(at: 5), 12)
        XCTAssertEqual(plan.meanRate, 30)
    }

    func testDurationsAndStagesParseOrSayWhatIsWrong() throws {
        XCTAssertEqual(LoadPlan.Stage.seconds("500ms"), 0.5)
        XCTAssertEqual(LoadPlan.Stage.seconds("30s"), 30)
        XCTAssertEqual(LoadPlan.Stage.seconds("2m"), 120)
        XCTAssertEqual(LoadPlan.Stage.seconds("1.5h"), 5400)
        XCTAssertNil(LoadPlan.Stage.seconds("10"))
        XCTAssertNil(LoadPlan.Stage.seconds("fast"))
        XCTAssertEqual(try LoadPlan.Stage(parsing: "500ms:3:2.5").description, "500ms:3:2.5")
        XCTAssertEqual(try LoadPlan.Stage(parsing: "2m:10:0").description, "120s:10:0")
        for (text, reason) in [
            ("10s:20", "expected DURATION:SUBSCRIBERS:RATE"), ("0s:1:1", "not a positive number"),
            ("1s:x:1", "subscribers 'x' is not a count"), ("1s:1:-2", "the rate '-2' is not a number"),
        ] {
            XCTAssertThrowsError(try LoadPlan.Stage(parsing: text), text) { error in
                XCTAssertTrue("\(error)".contains(reason), "\(text): \(error)")
            }
        }
    }

    func testWorkersSharesAddUpToTheWhole() {
        for (total, parts) in [(10, 3), (2, 2), (0, 4), (7, 1)] {
            let shares = (0..<parts).map { LoadCommand.share(total, $0, of: parts) }
            XCTAssertEqual(shares.reduce(0, +), total)
            XCTAssertLessThanOrEqual(shares.max()! - shares.min()!, 1)
        }
    }

    /// Two workers' snapshots merged hold every sample each recorded: the same counts and percentiles as one
    /// histogram of all their raw samples.
    func testMergedSnapshotsHoldEverySampleOfBothWorkers() {
        let workers = [
            LoadStats(refMarker: "a.", budget: 0, keepsRawSamples: true),
            LoadStats(refMarker: "b.", budget: 0, keepsRawSamples: true),
        ]
        let now = LoadStats.now()
        for (index, age) in [120_000, 3_000_000, 45_000, 9_000_000, 800_000, 2_500].enumerated() {
            let stats = workers[index % 2]
            stats.sent.add(1, ordering: .relaxed)
            stats.recordAck(sentAt: now &- UInt64(age), noop: index == 1)
            stats.recordDelivery(originRef: "\(stats.refMarker)0.\(index).\(now &- UInt64(age))", subscriber: index)
        }
        workers[0].recordError("conflict")
        workers[1].recordError("conflict")
        let merged = LoadStats(refMarker: "", budget: 0)
        for worker in workers { merged.merge(worker.snapshot) }
        XCTAssertEqual(merged.snapshot.counts["sent"], 6)
        XCTAssertEqual(merged.snapshot.counts["acked"], 6)
        XCTAssertEqual(merged.snapshot.counts["noops"], 1)
        XCTAssertEqual(merged.snapshot.counts["deliveries"], 6)
        XCTAssertEqual(merged.errorsByCode, ["conflict": 2])
        for name in ["ack", "delivery"] {
            var expected = LoadStats.histogram()
            for worker in workers {
                for sample in worker.raw[name] ?? [] { _ = expected.record(sample) }
            }
            let got = merged.snapshot.histograms[name]!
            XCTAssertEqual(got.totalCount, 6, name)
            for percentile in [10.0, 50, 90, 99, 100] {
                XCTAssertEqual(got.valueAtPercentile(percentile), expected.valueAtPercentile(percentile), name)
            }
            XCTAssertEqual(got.max, expected.max, name)
        }
    }
}
