import TableModel
import TablecastProtocol
import XCTest

/// `rows` on `editSection` and on `reloadSections` entries: decoded, counted against the batch limit, encoded.
final class SectionReloadRowsTests: XCTestCase {
    private func decode(_ text: String, limits: ProtocolLimits = ProtocolLimits()) throws -> ClientMessage {
        try ClientMessage.decode(Array(text.utf8), limits: limits)
    }

    func testRowsAreDecodedAndRoundTrip() throws {
        let edit = try decode(
            #"{"type":"editSection","table":"t","at":1,"rows":[{"value":"x"},{"value":2,"movable":false}]}"#)
        XCTAssertEqual(
            edit.body,
            .intent(
                table: "t", base: nil,
                .editSection(SectionRef(1), rows: [RowContent(value: "x"), RowContent(value: 2, movable: false)])))
        XCTAssertEqual(try ClientMessage.decode(edit.encoded), edit)
        let batch = try decode(
            #"{"type":"batch","table":"t","reloadSections":[{"at":0,"header":"H","rows":[]},{"at":2}]}"#)
        let expected = ClientBatch(
            reloadSections: [.init(section: SectionRef(0), header: "H", rows: []), .init(section: SectionRef(2))])
        XCTAssertEqual(batch.body, .intent(table: "t", base: nil, .batch(expected)))
        XCTAssertEqual(try ClientMessage.decode(batch.encoded), batch)
    }

    func testRowsAreCountedAndCheckedLikeInsertedSectionsRows() {
        XCTAssertThrowsError(
            try decode(
                #"{"type":"batch","table":"t","reloadSections":[{"at":0,"rows":[{"value":1},{"value":2}]}]}"#,
                limits: ProtocolLimits(maxBatchEntries: 2))
        ) { error in
            XCTAssertEqual((error as? ProtocolError)?.message, "batch has 3 entries; the limit is 2")
        }
        XCTAssertThrowsError(try decode(#"{"type":"editSection","table":"t","at":0,"rows":[{"editable":true}]}"#)) {
            error in
            XCTAssertEqual((error as? ProtocolError)?.message, "editSection.rows[0].value: missing")
        }
        XCTAssertThrowsError(try decode(#"{"type":"editSection","table":"t","at":0,"rows":[{"val":1}]}"#)) { error in
            XCTAssertEqual((error as? ProtocolError)?.message, "editSection.rows[0].val: unknown field")
        }
    }
}
