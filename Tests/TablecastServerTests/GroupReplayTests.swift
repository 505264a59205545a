import TableModel
import XCTest

@testable import TableStore
@testable import TablecastServer

/// Two nodes' engines on one table: the group one of them resolved is beaten to its versions by the other's
/// commits, and is resolved again on top of them from what ``GroupReplay`` recorded, with the batches
/// ``FollowedBatches`` decodes from the store's log.
final class GroupReplayTests: XCTestCase {
    private func table(_ values: [String]) -> TableEngine {
        TableEngine(table: Table(contents: [SectionContent(rows: values.map { RowContent(value: .string($0)) })]))
    }

    private func values(_ engine: TableEngine) -> [String] {
        engine.table.sections[0].rows.map { if case .string(let text) = $0.value { text } else { "?" } }
    }

    /// Resolves `intent` into `group` as the table actor does, and commits it to `engine`.
    private func take(
        _ intent: Intent, base: UInt64?, into group: inout GroupReplay<(Intent, UInt64?)>, _ engine: inout TableEngine
    ) throws {
        group.took((intent, base))
        let resolution = try engine.resolve(intent, base: base)
        guard !resolution.isNoop else { return }
        group.willChange(engine)
        try engine.commit(resolution)
    }

    func testABeatenGroupIsResolvedAgainOnTopOfTheOtherNodesCommits() throws {
        var winner = table(["a", "b", "c"])
        var loser = winner
        // The winner commits two versions: an edit of "a" and a delete of "c".
        var log: [LogEntry] = []
        for intent in [
            Intent.edit(RowRef(RowPath(section: 0, row: 0)), value: "A"), .delete(RowRef(RowPath(section: 0, row: 2))),
        ] {
            let resolution = try winner.resolve(intent, base: nil)
            try winner.commit(resolution)
            log.append(
                LogEntry(
                    table: "t", version: Int64(resolution.version),
                    batch: String(decoding: resolution.batch.jsonBytes, as: UTF8.self),
                    originClient: "w", originRef: nil, time: 0))
        }
        // Meanwhile the loser resolved a group at versions 1 and 2 (an insert after "b", an edit of "c" made
        // against version 0), and a second group on top of it.
        var first = GroupReplay<(Intent, UInt64?)>(recording: true)
        var second = GroupReplay<(Intent, UInt64?)>(recording: true)
        let before = loser
        try take(.insert(at: RowPath(section: 0, row: 2), row: RowContent(value: "x")), base: nil, into: &first, &loser)
        try take(.edit(RowRef(RowPath(section: 0, row: 1)), value: "B"), base: 0, into: &first, &loser)
        try take(.edit(RowRef(RowPath(section: 0, row: 0)), value: "a2"), base: 0, into: &second, &loser)
        XCTAssertEqual(values(loser), ["a2", "B", "x", "c"])
        // Its commit conflicts: both groups go back to where the first started, follow the winner, and resolve again.
        let replay = first.followed(by: second)
        XCTAssertTrue(replay.canRebase)
        XCTAssertEqual(replay.sources.count, 3)
        var rebased = try XCTUnwrap(replay.engineBefore)
        XCTAssertEqual(rebased.table, before.table)
        let followed = try XCTUnwrap(FollowedBatches(log, after: 0, table: "t"))
        XCTAssertEqual(followed.entries.map(\.version), [1, 2])
        try followed.apply(to: &rebased)
        XCTAssertEqual(rebased.table, winner.table)
        var again = GroupReplay<(Intent, UInt64?)>(recording: true)
        for (intent, base) in replay.sources { try take(intent, base: base, into: &again, &rebased) }
        // The edit made against version 0 still finds "b" (rebased by position) and "a2" wins over "A".
        XCTAssertEqual(values(rebased), ["a2", "B", "x"])
        XCTAssertEqual(rebased.table.version, 5)
    }

    func testAGapInTheLogOrAGroupThatRecordsNothingCannotBeFollowedOrRebased() throws {
        let entry = LogEntry(table: "t", version: 3, batch: "{}", originClient: "w", originRef: nil, time: 0)
        XCTAssertNil(FollowedBatches([entry], after: 1, table: "t"), "version 2 is missing")
        var engine = table(["a"])
        var unshared = GroupReplay<(Intent, UInt64?)>(recording: false)
        try take(.delete(RowRef(RowPath(section: 0, row: 0))), base: nil, into: &unshared, &engine)
        XCTAssertFalse(unshared.canRebase)
        XCTAssertTrue(unshared.sources.isEmpty)
    }
}
