import TableModel
import TablecastProtocol
import TablecastTesting
import XCTest

/// The client's direct reader of `update` messages against the general decoder.
final class UpdateDirectDecodingTests: XCTestCase {
    /// Updates as the server writes them, and as a server may: every list, reordered, spaced, escaped, repeated.
    private static let updates = [
        #"{"type":"update","table":"groceries","version":42,"origin":{"client":"w3","ref":"w3.17"},"deleteRows":[],"deleteSections":[],"insertRows":[],"insertSections":[],"moveRows":[],"moveSections":[],"reloadRows":[{"at":[0,5],"value":{"item":"milk","qty":2}}],"reloadSections":[]}"#,
        #"{"type":"update","table":"t","version":7,"origin":{"client":"c"},"deleteRows":[[1,4],[0,0]],"insertRows":[{"at":[1,0],"row":{"editable":false,"editingStyle":"insert","id":"r12","movable":false,"value":"A"}}],"moveRows":[{"from":[1,3],"to":[1,0]}],"reloadRows":[{"at":[1,2],"editable":true,"editingStyle":"none","movable":false,"value":[1,{"a":null}]}]}"#,
        #" { "reloadRows" : [ { "value" : 2.5e0 , "at" : [ 1 , 0.0 ] } ] , "origin" : { "ref" : null , "client" : "é\u00e9" } , "version" : 1E1 , "table" : "a" , "type" : "update" } "#,
        #"{"type":"update","table":"t","version":3,"origin":{"client":"c","ref":"r"},"deleteSections":[2,0],"insertRows":[{"row":{"value":null,"id":"r5"},"at":[0,0]}]}"#,
        #"{"type":"update","table":"t","version":0,"origin":{"client":"c"}}"#,
        #"{"type":"update","table":"t","version":9,"origin":{"client":"c"},"insertSections":[{"at":0,"section":{"footer":null,"header":"H","id":"s3","rows":[]}}],"moveSections":[{"from":0,"to":1}],"reloadSections":[{"at":1,"footer":"f","header":null}]}"#,
        #"{"type":"update","table":"t","version":2,"origin":{"client":"c","name":"newer servers may add this"},"reloadRows":[]}"#,
        #"{"type":"upd\u0061te","table":"t","version":2,"origin":{"client":"c"}}"#,
        #"{"type":"update","type":"update","table":"t","version":2,"origin":{"client":"c"}}"#,
        #"{"type":"update","table":"t","version":-0,"origin":{"client":"c"},"deleteRows":[[0,18014398509481984]]}"#,
        #"{"type":"update","table":"t","version":2,"origin":{"client":"c"},"extra":1}"#,
        #"{"type":"ack","table":"t","version":2,"ref":"r"}"#,
    ]

    /// The direct reader takes a subset of what the general decoder accepts and decodes it alike: on every prefix
    /// and on random mutations of the updates, whatever it takes equals the result of decoding the parsed tree (a
    /// refusal from it is left to the general decoder, whose errors the other tests compare).
    func testTheDirectUpdateReaderAgreesWithTheTreeDecoder() {
        assertDirectReaderAgrees(
            samples: Self.updates, taking: 6, of: "updates", keyLetters: "refatvaluerowmoveid",
            direct: { ServerMessage.decodeUpdate($0) }, viaTree: { try ServerMessage.decode(JSONValue(parsing: $0)) })
    }

    /// What the server writes for every committed batch is read directly, and decodes to the update written.
    func testEncodedUpdatesAreReadDirectly() throws {
        let batch = Batch(
            deleteSections: [1], deleteRows: [RowPath(section: 0, row: 3)],
            insertRows: [.init(at: RowPath(section: 0, row: 0), row: Row(id: "r9", value: ["a": 1], movable: false))],
            reloadRows: [.init(at: RowPath(section: 0, row: 1), value: "x", editingStyle: EditingStyle.none)],
            moveRows: [.init(from: RowPath(section: 0, row: 2), to: RowPath(section: 0, row: 4))])
        let update = ServerMessage.Update(table: "t", version: 5, originClient: "c", originRef: "c.1", batch: batch)
        XCTAssertEqual(ServerMessage.decodeUpdate(update.encoded), .update(update))
        XCTAssertEqual(try ServerMessage.decode(update.encoded), .update(update))
    }

    /// A message the reader gives up on still gets the general decoder's error.
    func testRefusalsStayTheGeneralDecoders() {
        let unknown = Array(#"{"type":"update","table":"t","version":2,"origin":{"client":"c"},"extra":1}"#.utf8)
        XCTAssertNil(ServerMessage.decodeUpdate(unknown))
        XCTAssertThrowsError(try ServerMessage.decode(unknown)) { error in
            XCTAssertEqual((error as? JSONDecodingError)?.path, "extra")
        }
        let badPath = Array(
            #"{"type":"update","table":"t","version":2,"origin":{"client":"c"},"deleteRows":[[0]]}"#.utf8)
        XCTAssertNil(ServerMessage.decodeUpdate(badPath))
        XCTAssertThrowsError(try ServerMessage.decode(badPath)) { error in
            XCTAssertEqual((error as? JSONDecodingError)?.path, "deleteRows[0]")
        }
    }
}
