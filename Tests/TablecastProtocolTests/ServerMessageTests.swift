import TableModel
import TablecastProtocol
import XCTest

final class ServerMessageTests: XCTestCase {
    private func text(_ message: ServerMessage) -> String { String(decoding: message.encoded, as: UTF8.self) }

    /// The states example from the table-view documentation, resolved by the real engine.
    private func statesResolution() throws -> (Resolution, TableEngine) {
        let states = ["Arizona", "California", "Delaware", "New Jersey", "Washington"]
        let table = Table(contents: [SectionContent(rows: states.map { RowContent(value: .string($0)) })])
        let engine = TableEngine(table: table)
        let intent = Intent.batch(
            ClientBatch(
                deleteRows: [RowRef(RowPath(section: 0, row: 2)), RowRef(RowPath(section: 0, row: 4))],
                insertRows: [
                    .init(at: RowPath(section: 0, row: 0), row: RowContent(value: "Alaska")),
                    .init(at: RowPath(section: 0, row: 3), row: RowContent(value: "Georgia")),
                    .init(at: RowPath(section: 0, row: 5), row: RowContent(value: "Virginia")),
                ]))
        return (try engine.resolve(intent, base: 0), engine)
    }

    func testUpdateCarriesAllEightListsAndItsOrigin() throws {
        let (resolution, _) = try statesResolution()
        let update = ServerMessage.update(
            .init(
                table: "states", version: resolution.version, originClient: "ana", originRef: "b1",
                batch: resolution.batch))
        XCTAssertEqual(
            text(update),
            #"{"type":"update","table":"states","version":1,"origin":{"client":"ana","ref":"b1"},"#
                + #""deleteRows":[[0,2],[0,4]],"deleteSections":[],"insertRows":[{"at":[0,0],"row":{"id":"r7","value":"Alaska"}},"#
                + #"{"at":[0,3],"row":{"id":"r8","value":"Georgia"}},{"at":[0,5],"row":{"id":"r9","value":"Virginia"}}],"#
                + #""insertSections":[],"moveRows":[],"moveSections":[],"reloadRows":[],"reloadSections":[]}"#)
        XCTAssertEqual(try JSONValue(parsing: update.encoded), update.json, "the direct text and the value agree")
    }

    func testAckReportsCreatedIdsAndWhereInsertsLanded() throws {
        let (resolution, _) = try statesResolution()
        XCTAssertEqual(
            text(.ack(.init(ref: "b1", table: "states", epoch: "9f2c", resolution: resolution))),
            #"{"created":["r7","r8","r9"],"epoch":"9f2c","ref":"b1","resolved":[[0,0],[0,3],[0,5]],"table":"states","type":"ack","version":1}"#
        )
        XCTAssertEqual(
            text(.ack(.init(ref: nil, table: "t", version: 4, epoch: "e1", noop: true))),
            #"{"epoch":"e1","noop":true,"table":"t","type":"ack","version":4}"#)
    }

    func testSectionInsertsAndMovesResolveToIndexes() throws {
        let engine = TableEngine(table: Table(contents: [SectionContent(header: "A"), SectionContent(header: "B")]))
        let resolution = try engine.resolve(.moveSection(from: SectionRef(0), to: 1))
        XCTAssertEqual(
            text(.ack(.init(ref: "m", table: "t", epoch: "e1", resolution: resolution))),
            #"{"epoch":"e1","ref":"m","resolved":[1],"table":"t","type":"ack","version":1}"#)
    }

    func testErrorsAndStatusMessages() {
        XCTAssertEqual(
            text(
                .error(
                    ProtocolError(.outOfRange, "deleteRows[1]: row [0,5] does not exist", at: "deleteRows[1]", ref: "x")
                )),
            #"{"at":"deleteRows[1]","code":"out_of_range","message":"deleteRows[1]: row [0,5] does not exist","ref":"x","type":"error"}"#
        )
        XCTAssertEqual(
            text(.error(ProtocolError(.badRequest, "a message must be a JSON object"))),
            #"{"code":"bad_request","message":"a message must be a JSON object","type":"error"}"#)
        let status = ServerMessage.TableStatus(table: "t", version: 3, epoch: "e1", rules: TableRules(moves: .none))
        XCTAssertEqual(
            text(.subscribed(ref: "s", status: status)),
            #"{"epoch":"e1","ref":"s","rules":{"deleteConfirmationTitle":"Delete","maxRowsPerSection":100000,"#
                + #""maxSections":10000,"maxValueBytes":65536,"moves":"none","reserveLastRow":false},"table":"t","#
                + #""type":"subscribed","version":3}"#)
        XCTAssertEqual(text(.unsubscribed(ref: nil, table: "t")), #"{"table":"t","type":"unsubscribed"}"#)
        XCTAssertEqual(
            text(.unsubscribed(ref: nil, table: "t", reason: "no longer readable")),
            #"{"reason":"no longer readable","table":"t","type":"unsubscribed"}"#)
        XCTAssertEqual(
            text(.tokenRefreshed(ref: "t1", expires: 1_795_425_355)), #"{"expires":1795425355,"ref":"t1","type":"ack"}"#
        )
        XCTAssertEqual(text(.dropped(table: "t")), #"{"table":"t","type":"dropped"}"#)
        XCTAssertEqual(
            text(.tables(ref: "l", [.init(table: "a", version: 2, epoch: "e", subscribers: 1)])),
            #"{"ref":"l","tables":[{"epoch":"e","subscribers":1,"table":"a","version":2}],"type":"tables"}"#)
    }

    func testPresenceIsADeltaWithTypeFirstAndTheStateRidesOnTheCatchUp() throws {
        let delta = ServerMessage.presence(
            PresenceDelta(
                table: "t", joined: [.init(key: "c1", client: "a", name: "Ana", editing: true, row: "r1")],
                changed: [.init(key: "c2", client: "b", name: "Bo", editing: false, row: nil)], left: ["c3"], viewers: 4
            ))
        XCTAssertEqual(
            text(delta),
            #"{"type":"presence","table":"t","joined":[{"client":"a","editing":true,"key":"c1","name":"Ana","row":"r1"}],"#
                + #""changed":[{"client":"b","editing":false,"key":"c2","name":"Bo"}],"left":["c3"],"viewers":4}"#)
        XCTAssertEqual(try JSONValue(parsing: delta.encoded), delta.json, "the direct text and the value agree")
        let presence = PresenceState(
            you: "c9", clients: [.init(key: "c1", client: "a", name: "Ana", editing: false, row: nil)], viewers: 2)
        let status = ServerMessage.TableStatus(
            table: "t", version: 3, epoch: "e1", rules: TableRules(), presence: presence)
        for message in [ServerMessage.subscribed(ref: "s", status: status), .refreshed(ref: nil, status: status)] {
            XCTAssertEqual(try JSONValue(parsing: message.encoded), message.json, "the direct text and the value agree")
            XCTAssertTrue(
                text(message).contains(
                    #""presence":{"clients":[{"client":"a","editing":false,"key":"c1","name":"Ana"}],"viewers":2,"you":"c9"}"#
                ))
        }
    }

    func testSnapshotAndWelcome() {
        let table = Table(contents: [
            SectionContent(header: "H", rows: [RowContent(value: [1, "two"], editable: false)])
        ])
        XCTAssertEqual(
            text(.snapshot(table: "t", version: 0, epoch: "e", rules: table.rules, sections: table.sections)),
            #"{"epoch":"e","rules":{"deleteConfirmationTitle":"Delete","maxRowsPerSection":100000,"maxSections":10000,"#
                + #""maxValueBytes":65536,"moves":"any","reserveLastRow":false},"sections":[{"footer":null,"header":"H","#
                + #""id":"s1","rows":[{"editable":false,"id":"r2","value":[1,"two"]}]}],"table":"t","type":"snapshot","version":0}"#
        )
        let welcome = ServerMessage.Welcome(
            ref: nil, client: "anon-1", serverName: "tablecast", serverVersion: "1.0.0", maxMessageBytes: 1_048_576,
            maxBatchEntries: 1000, intentsPerSecond: 1000)
        XCTAssertEqual(
            text(.welcome(welcome)),
            #"{"client":"anon-1","limits":{"intentsPerSecond":1000,"maxBatchEntries":1000,"maxMessageBytes":1048576},"#
                + #""server":{"name":"tablecast","protocol":1,"version":"1.0.0"},"type":"welcome"}"#)
    }

    func testTableErrorsMapToTheirWireCodes() throws {
        let engine = TableEngine(table: Table(contents: [SectionContent(rows: [RowContent(value: 1)])]))
        XCTAssertThrowsError(try engine.resolve(.delete(RowRef(RowPath(section: 0, row: 5))))) { error in
            let wire = ProtocolError(error as! TableError, ref: "d")
            XCTAssertEqual(wire.code, .outOfRange)
            XCTAssertEqual(wire.ref, "d")
            XCTAssertEqual(wire.message, (error as! TableError).message)
        }
        for code in TableError.Code.allCases {
            XCTAssertNotNil(ProtocolError.Code(rawValue: code.rawValue), "\(code) has no wire code")
        }
    }
}
