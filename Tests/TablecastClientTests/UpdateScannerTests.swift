import TableModel
import TablecastProtocol
import XCTest

@testable import TablecastClient

final class UpdateScannerTests: XCTestCase {
    func testReadsTableVersionAndOriginOfUpdatesOnly() {
        let tricky: JSONValue = ["type": "update", "table": "other", "version": 99, "s": "\"}{\\"]
        let batch = Batch(insertRows: [.init(at: RowPath(section: 0, row: 0), row: Row(id: "r2", value: tricky))])
        let update = ServerMessage.update(
            .init(table: "t", version: 7, originClient: "c", originRef: "w1.2.345", batch: batch))
        XCTAssertEqual(
            UpdateScanner.scan(update.encoded),
            .init(table: "t", version: 7, originClient: "c", originRef: "w1.2.345"))
        let anonymous = ServerMessage.update(
            .init(table: "t", version: 8, originClient: "anon-1", originRef: nil, batch: Batch()))
        XCTAssertEqual(UpdateScanner.scan(anonymous.encoded)?.originRef, nil)
        XCTAssertEqual(UpdateScanner.scan(anonymous.encoded)?.version, 8)
        XCTAssertNil(UpdateScanner.scan(ServerMessage.ack(.init(ref: "x", table: "t", version: 3)).encoded))
        XCTAssertNil(UpdateScanner.scan(ServerMessage.dropped(table: "t").encoded))
        XCTAssertNil(UpdateScanner.scan(Array("{\"type\":\"upd".utf8)))
        // Another server may order the members otherwise (here sorted, origin before type): the scan still works.
        XCTAssertEqual(
            UpdateScanner.scan(update.json.jsonBytes),
            .init(table: "t", version: 7, originClient: "c", originRef: "w1.2.345"))
    }

    func testPresenceIsRecognizedByItsFirstMember() {
        let presence = ServerMessage.presence(
            PresenceDelta(
                table: "t",
                joined: [.init(key: "c1", client: "a", name: "{\"type\":\"update\"", editing: false, row: nil)],
                viewers: 0))
        XCTAssertTrue(TablecastClient.isPresence(presence.encoded))
        let row = Row(id: "r1", value: "{\"type\":\"presence\"")
        let update = ServerMessage.update(
            .init(
                table: "t", version: 1, originClient: "c", originRef: nil,
                batch: Batch(insertRows: [.init(at: RowPath(section: 0, row: 0), row: row)])))
        XCTAssertFalse(TablecastClient.isPresence(update.encoded))
    }
}
