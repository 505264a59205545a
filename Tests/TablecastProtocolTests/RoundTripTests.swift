import TableModel
import TablecastProtocol
import XCTest

/// The client's directions (``ClientMessage/encoded``, ``ServerMessage/decode(_:)-([UInt8])``) are the exact
/// inverses of the server's (``ClientMessage/decode(_:limits:)``, ``ServerMessage/encoded``).
final class RoundTripTests: XCTestCase {
    private func assertClientRoundTrip(_ message: ClientMessage, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(try ClientMessage.decode(message.encoded), message, file: file, line: line)
    }

    private func assertServerRoundTrip(_ message: ServerMessage, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(try ServerMessage.decode(message.encoded), message, file: file, line: line)
        // And encoding what was decoded gives the same bytes.
        XCTAssertEqual(try ServerMessage.decode(message.encoded).encoded, message.encoded, file: file, line: line)
    }

    func testEveryClientMessageRoundTrips() {
        let p = { (s: Int, r: Int) in RowPath(section: s, row: r) }
        let messages: [ClientMessage] = [
            ClientMessage(ref: "h", .hello(client: "laptop-7f3a", name: "Ana", token: "s3cret")),
            ClientMessage(.hello(client: "c", name: nil, token: nil)),
            ClientMessage(ref: "t1", .refreshToken(token: "eyJ.eyJ.sig")),
            ClientMessage(
                ref: "c1",
                .createTable(
                    table: "groceries",
                    sections: [
                        SectionContent(
                            header: "Fruit", footer: nil,
                            rows: [RowContent(value: "fig"), RowContent(value: 2, editable: false)]),
                        SectionContent(),
                    ],
                    rules: RulesPatch(moves: .withinSection, reserveLastRow: true, deleteConfirmationTitle: "Remove"))),
            ClientMessage(.createTable(table: "t", sections: [], rules: RulesPatch())),
            ClientMessage(ref: "d", .dropTable(table: "t")),
            ClientMessage(
                .setRules(table: "t", rules: RulesPatch(maxSections: 3, maxRowsPerSection: 4, maxValueBytes: 5))),
            ClientMessage(ref: "l", .listTables),
            ClientMessage(ref: "s", .subscribe(table: "t", since: 41, epoch: "9f2c")),
            ClientMessage(.subscribe(table: "t", since: nil, epoch: nil)),
            ClientMessage(.refresh(table: "t", since: 3, epoch: "e")),
            ClientMessage(.unsubscribe(table: "t")),
            ClientMessage(
                ref: "i",
                .intent(table: "t", base: 7, .insert(at: p(0, 1), row: RowContent(value: ["a": 1], movable: false)))),
            ClientMessage(ref: "i2", .intent(table: "t", base: nil, .insert(at: p(0, 0), row: RowContent(value: nil)))),
            ClientMessage(ref: "x", .intent(table: "t", base: 0, .delete(RowRef(p(1, 2), id: "r9")))),
            ClientMessage(.intent(table: "t", base: 0, .delete(RowRef(p(1, 2))))),
            ClientMessage(.intent(table: "t", base: 2, .move(from: RowRef(p(0, 3), id: "r1"), to: p(1, 0)))),
            ClientMessage(
                .intent(table: "t", base: 2, .edit(RowRef(p(0, 3)), value: "new", editable: false, movable: true))),
            ClientMessage(.intent(table: "t", base: 2, .edit(RowRef(p(0, 3), id: "r3"), value: [1, 2]))),
            ClientMessage(.intent(table: "t", base: 2, .edit(RowRef(p(0, 3)), value: "Add", editingStyle: .insert))),
            ClientMessage(
                .intent(table: "t", base: 2, .insert(at: p(0, 0), row: RowContent(value: "w", editingStyle: .none)))),
            ClientMessage(
                .intent(
                    table: "t", base: 2,
                    .batch(ClientBatch(reloadRows: [.init(row: RowRef(p(0, 1)), value: 1, editingStyle: .delete)])))),
            ClientMessage(
                .intent(
                    table: "t", base: 2,
                    .insertSection(at: 1, section: SectionContent(header: "H", rows: [RowContent(value: 1)])))),
            ClientMessage(.intent(table: "t", base: 2, .deleteSection(SectionRef(1, id: "s2")))),
            ClientMessage(.intent(table: "t", base: 2, .moveSection(from: SectionRef(1), to: 0))),
            ClientMessage(
                .intent(table: "t", base: 2, .editSection(SectionRef(0), header: .some(nil), footer: .some("F")))),
            ClientMessage(
                .intent(table: "t", base: 2, .editSection(SectionRef(0, id: "s1"), header: "H", footer: nil))),
            ClientMessage(
                ref: "b1",
                .intent(
                    table: "states", base: 7,
                    .batch(
                        ClientBatch(
                            deleteSections: [SectionRef(2, id: "s9")],
                            insertSections: [
                                .init(at: 0, section: SectionContent(header: "New", rows: [RowContent(value: "x")]))
                            ],
                            reloadSections: [.init(section: SectionRef(1), header: "Renamed", footer: .some(nil))],
                            moveSections: [.init(from: SectionRef(0), to: 3)],
                            deleteRows: [RowRef(p(1, 4), id: "r17")],
                            insertRows: [.init(at: p(1, 0), row: RowContent(value: "Alaska"))],
                            reloadRows: [.init(row: RowRef(p(1, 2), id: "r12"), value: "Delaware!", editable: false)],
                            moveRows: [.init(from: RowRef(p(1, 3), id: "r15"), to: p(1, 0))])))),
            ClientMessage(
                ref: "p",
                .intent(table: "t", base: 4, .patch(RowRef(p(0, 1), id: "r2"), patch: ["done": true, "x": nil]))),
            ClientMessage(.intent(table: "t", base: nil, .patch(RowRef(p(0, 1)), patch: "whole"))),
            ClientMessage(
                .intent(
                    table: "t", base: 2,
                    .batch(
                        ClientBatch(
                            deleteRows: [RowRef(p(0, 0))],
                            patchRows: [.init(row: RowRef(p(0, 2), id: "r4"), patch: ["n": ["m": 1]])])))),
            ClientMessage(.intent(table: "t", base: nil, .batch(ClientBatch()))),
            ClientMessage(.editing(table: "t", on: true)),
            ClientMessage(.beginEditingRow(table: "t", row: "r12")),
            ClientMessage(.endEditingRow(table: "t", row: "r12")),
            ClientMessage(ref: "q", .history(table: "t", from: 3, to: 40, limit: 20, newestFirst: true)),
            ClientMessage(.history(table: "t", from: nil, to: nil, limit: nil, newestFirst: false)),
            ClientMessage(ref: "s", .snapshotAt(table: "t", version: 12)),
        ]
        for message in messages { assertClientRoundTrip(message) }
    }

    func testClientWireShapesMatchTheSpec() {
        let insert = ClientMessage(
            ref: "a",
            .intent(table: "t", base: 3, .insert(at: RowPath(section: 0, row: 1), row: RowContent(value: "x"))))
        XCTAssertEqual(
            insert.json.jsonText, #"{"at":[0,1],"base":3,"ref":"a","table":"t","type":"insert","value":"x"}"#)
        let delete = ClientMessage(
            .intent(table: "t", base: nil, .delete(RowRef(RowPath(section: 0, row: 2), id: "r5"))))
        XCTAssertEqual(delete.json.jsonText, #"{"at":[0,2],"row":"r5","table":"t","type":"delete"}"#)
        let batch = ClientMessage(
            .intent(
                table: "t", base: 1,
                .batch(
                    ClientBatch(
                        deleteRows: [RowRef(RowPath(section: 0, row: 0))],
                        moveRows: [
                            .init(from: RowRef(RowPath(section: 0, row: 1), id: "r2"), to: RowPath(section: 0, row: 0))
                        ]))))
        XCTAssertEqual(
            batch.json.jsonText,
            #"{"base":1,"deleteRows":[{"at":[0,0]}],"moveRows":[{"from":[0,1],"row":"r2","to":[0,0]}],"table":"t","type":"batch"}"#
        )
    }

    func testPatchWireShapesMatchTheSpec() {
        let patch = ClientMessage(
            ref: "p", .intent(table: "t", base: 3, .patch(RowRef(RowPath(section: 0, row: 1)), patch: ["done": true])))
        XCTAssertEqual(
            patch.json.jsonText, #"{"at":[0,1],"base":3,"patch":{"done":true},"ref":"p","table":"t","type":"patch"}"#)
        let batch = ClientMessage(
            .intent(
                table: "t", base: nil,
                .batch(ClientBatch(patchRows: [.init(row: RowRef(RowPath(section: 0, row: 0)), patch: ["n": nil])]))))
        XCTAssertEqual(
            batch.json.jsonText, #"{"patchRows":[{"at":[0,0],"patch":{"n":null}}],"table":"t","type":"batch"}"#)
    }

    func testEveryServerMessageRoundTrips() throws {
        let table = Table(contents: [
            SectionContent(
                header: "Fruit", footer: "f",
                rows: [
                    RowContent(value: "fig"), RowContent(value: [1, true], movable: false),
                    RowContent(value: "+", editingStyle: .insert),
                ]),
            SectionContent(),
        ])
        let engine = TableEngine(table: table)
        let resolution = try engine.resolve(
            .batch(
                ClientBatch(
                    insertSections: [.init(at: 1, section: SectionContent(header: "N", rows: [RowContent(value: 1)]))],
                    reloadSections: [.init(section: SectionRef(0), header: .some(nil))],
                    moveSections: [.init(from: SectionRef(1), to: 2)],
                    deleteRows: [RowRef(RowPath(section: 0, row: 0))],
                    insertRows: [.init(at: RowPath(section: 0, row: 1), row: RowContent(value: "new"))],
                    reloadRows: [
                        .init(
                            row: RowRef(RowPath(section: 0, row: 1)), value: "edited", editable: true,
                            editingStyle: EditingStyle.none)
                    ])),
            base: 0)
        let rules = TableRules(moves: .withinSection, reserveLastRow: true)
        let messages: [ServerMessage] = [
            .welcome(
                .init(
                    ref: "h", client: "c", serverName: "tablecast", serverVersion: "1.0.0", maxMessageBytes: 1 << 20,
                    maxBatchEntries: 1000, intentsPerSecond: 1000)),
            .welcome(
                .init(
                    ref: nil, client: "anon-1", serverName: "tablecast", serverVersion: "1.0.0", maxMessageBytes: 1,
                    maxBatchEntries: 2, intentsPerSecond: 3)),
            .ack(.init(ref: "b1", table: "t", epoch: "e1", resolution: resolution)),
            .ack(.init(ref: "c", table: "t", version: 0, epoch: "e1")),
            .ack(.init(ref: nil, table: "t", version: 4, epoch: "e1", noop: true)),
            .error(ProtocolError(.outOfRange, "deleteRows[1]: no", at: "deleteRows[1]", ref: "x")),
            .error(ProtocolError(.conflict, "gone")),
            .snapshot(table: "t", version: 9, epoch: "e", rules: rules, sections: table.sections),
            .snapshot(table: "t", version: 0, epoch: "e", rules: TableRules(), sections: []),
            .update(.init(table: "t", version: 1, originClient: "ana", originRef: "b1", batch: resolution.batch)),
            .update(.init(table: "t", version: 2, originClient: "anon-3", originRef: nil, batch: Batch())),
            .subscribed(ref: "s", status: .init(table: "t", version: 3, epoch: "e", rules: rules)),
            .refreshed(ref: nil, status: .init(table: "t", version: 3, epoch: "e", rules: TableRules())),
            .unsubscribed(ref: "u", table: "t"),
            .tables(
                ref: "l",
                [
                    .init(table: "a", version: 2, epoch: "e", subscribers: 1),
                    .init(table: "b", version: 0, epoch: "f", subscribers: 0),
                ]),
            .tables(ref: nil, []),
            .presence(
                PresenceDelta(
                    table: "t",
                    joined: [.init(key: "c1", client: "a", name: "Ana", editing: true, row: "r1", user: "ana")],
                    changed: [.init(key: "c2", client: "b", name: "Bo", editing: false, row: nil)], left: ["c3", "c4"],
                    viewers: 7)),
            .presence(PresenceDelta(table: "t", viewers: 0)),
            .subscribed(
                ref: "s",
                status: .init(
                    table: "t", version: 3, epoch: "e", rules: rules,
                    presence: PresenceState(
                        you: "c2",
                        clients: [.init(key: "c2", client: "b", name: "Bo", editing: true, row: nil, user: "bo")],
                        viewers: 1))),
            .refreshed(
                ref: nil,
                status: .init(table: "t", version: 3, epoch: "e", rules: rules, presence: PresenceState(you: "c5"))),
            .dropped(table: "t"),
            .unsubscribed(ref: nil, table: "t", reason: "the connection's token no longer lets it read table 't'"),
            .tokenRefreshed(ref: "t1", expires: 1_795_425_355),
            .tokenRefreshed(ref: nil, expires: nil),
            .rules(table: "t", rules: rules),
            .historicalSnapshot(ref: "s2", table: "t", version: 2, epoch: "e", rules: rules, sections: table.sections),
            .changes(
                .init(
                    ref: "q", table: "t", epoch: "e", version: 9, oldest: 0,
                    entries: [
                        .init(
                            version: 2, time: 1_795_425_355_732, originClient: "ana", originName: "Ana",
                            originRef: "b1", batch: resolution.batch, originUser: "ana"),
                        .init(
                            version: 1, time: 1_795_425_355_000, originClient: "anon-3", originName: nil,
                            originRef: nil, batch: Batch()),
                    ],
                    next: 0)),
            .changes(.init(ref: nil, table: "t", epoch: "e", version: 0, oldest: 0, entries: [], next: nil)),
        ]
        for message in messages { assertServerRoundTrip(message) }
        // A historical snapshot, written directly, is byte for byte what its JSON tree gives.
        for case let message in messages {
            guard case .historicalSnapshot = message else { continue }
            XCTAssertEqual(message.encoded, message.json.jsonBytes)
        }
    }

    func testMalformedServerMessagesNameTheField() {
        XCTAssertThrowsError(try ServerMessage.decode(Array(#"{"type":"ack","table":"t"}"#.utf8))) { error in
            XCTAssertEqual((error as? JSONDecodingError)?.path, "version")
        }
        XCTAssertThrowsError(try ServerMessage.decode(Array(#"{"type":"nope"}"#.utf8)))
        XCTAssertThrowsError(try ServerMessage.decode(Array("[1]".utf8)))
    }
}
