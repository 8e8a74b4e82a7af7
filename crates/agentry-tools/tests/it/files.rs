//! Read, Write and Edit: numbered lines and their caps, writes that create directories, and
//! edits that refuse ambiguous or empty changes.

use crate::common::{Sandbox, call, ctx};
use agentry::Tool;
use agentry::content::Part;
use agentry::prelude::*;
use agentry_tools::{Edit, Read, Write};

#[tokio::test]
async fn read_numbers_lines_like_cat_n() {
    let sb = Sandbox::new();
    sb.file("a.txt", "alpha\r\nbeta\n\ngamma");
    let read = Read::new(&sb.ws);
    let out = call(&read, json!({"file_path": "a.txt"})).await.unwrap();
    assert_eq!(
        out,
        "     1\talpha\n     2\tbeta\n     3\t\n     4\tgamma\n"
    );
    // An absolute path inside the workspace works the same.
    let abs = sb.root().join("a.txt");
    let same = call(&read, json!({"file_path": abs})).await.unwrap();
    assert_eq!(same, out);
}

#[tokio::test]
async fn read_offset_and_limit_select_lines_and_say_what_follows() {
    let sb = Sandbox::new();
    let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    sb.file("ten.txt", &text);
    let read = Read::new(&sb.ws);
    let out = call(
        &read,
        json!({"file_path": "ten.txt", "offset": 4, "limit": 2}),
    )
    .await
    .unwrap();
    assert_eq!(
        out,
        "     4\tline 4\n     5\tline 5\n[stopped at line 5 (the line limit); more lines follow: read on with offset=6]\n"
    );
    let out = call(&read, json!({"file_path": "ten.txt", "offset": 9}))
        .await
        .unwrap();
    assert_eq!(out, "     9\tline 9\n    10\tline 10\n");
    let err = call(&read, json!({"file_path": "ten.txt", "offset": 20}))
        .await
        .unwrap_err();
    assert!(
        err.contains("has 10 lines; offset 20 is past its end"),
        "{err}"
    );
}

#[tokio::test]
async fn read_caps_lines_line_length_and_size() {
    let sb = Sandbox::new();
    let text: String = (1..=50).map(|i| format!("{i}\n")).collect();
    sb.file("fifty.txt", &text);
    sb.file("long.txt", &"y".repeat(30));
    sb.file("big.txt", &"z\n".repeat(1000));
    let read = Read::new(&sb.ws)
        .max_lines(3)
        .max_line_chars(10)
        .max_bytes(500);
    let out = call(&read, json!({"file_path": "fifty.txt"}))
        .await
        .unwrap();
    assert!(
        out.starts_with("     1\t1\n     2\t2\n     3\t3\n[stopped at line 3"),
        "{out}"
    );
    let out = call(&read, json!({"file_path": "long.txt"})).await.unwrap();
    assert_eq!(out, "     1\tyyyyyyyyyy… [20 more characters cut]\n");
    let err = call(&read, json!({"file_path": "big.txt"}))
        .await
        .unwrap_err();
    assert!(
        err.contains("is 2000 bytes, more than the 500 bytes Read returns at once"),
        "{err}"
    );
    // In parts it reads, and no part is over the cap.
    let read = Read::new(&sb.ws).max_bytes(100);
    let out = call(
        &read,
        json!({"file_path": "big.txt", "offset": 1, "limit": 1000}),
    )
    .await
    .unwrap();
    assert!(out.contains("the 100-byte limit of one read"), "{out}");
}

#[tokio::test]
async fn read_returns_images_and_pdfs_as_parts_the_model_sees() {
    let sb = Sandbox::new();
    // A PNG larger than the text cap, and a PDF named without its extension.
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    png.resize(300 * 1024, 7);
    std::fs::write(sb.root().join("shot.png"), &png).unwrap();
    std::fs::write(sb.root().join("invoice"), b"%PDF-1.7\n1 0 obj").unwrap();
    let read = Read::new(&sb.ws);
    let out = read
        .call(json!({"file_path": "shot.png"}), ctx("Read"))
        .await
        .unwrap();
    let [Part::Image(image)] = out.content.parts() else {
        panic!("an image part: {:?}", out.content);
    };
    assert_eq!(image.media_type, "image/png");
    assert_eq!(image.name.as_deref(), Some("shot.png"));
    assert_eq!(image.data(), Some(&png[..]));
    let out = read
        .call(json!({"file_path": "invoice"}), ctx("Read"))
        .await
        .unwrap();
    let [Part::File(pdf)] = out.content.parts() else {
        panic!("a document part: {:?}", out.content);
    };
    assert_eq!(pdf.media_type, "application/pdf");
    // Past the media cap, the error says how big the file is.
    let err = call(
        &Read::new(&sb.ws).max_media_bytes(1000),
        json!({"file_path": "shot.png"}),
    )
    .await
    .unwrap_err();
    assert!(err.contains("image/png file of 307200 bytes"), "{err}");
}

#[tokio::test]
async fn read_refuses_binary_files_directories_and_missing_files() {
    let sb = Sandbox::new();
    std::fs::write(sb.root().join("bin.dat"), [0x7f, b'E', 0, 1, 2]).unwrap();
    std::fs::create_dir(sb.root().join("dir")).unwrap();
    let read = Read::new(&sb.ws);
    let err = call(&read, json!({"file_path": "bin.dat"}))
        .await
        .unwrap_err();
    assert!(err.contains("binary file"), "{err}");
    let err = call(&read, json!({"file_path": "dir"})).await.unwrap_err();
    assert!(err.contains("is a directory"), "{err}");
    let err = call(&read, json!({"file_path": "nope.txt"}))
        .await
        .unwrap_err();
    assert!(err.contains("does not exist"), "{err}");
    sb.file("empty.txt", "");
    let out = call(&read, json!({"file_path": "empty.txt"}))
        .await
        .unwrap();
    assert!(out.contains("is empty"), "{out}");
}

#[tokio::test]
async fn write_creates_parent_directories_and_overwrites() {
    let sb = Sandbox::new();
    let write = Write::new(&sb.ws);
    let out = call(
        &write,
        json!({"file_path": "deep/er/new.txt", "content": "hello"}),
    )
    .await
    .unwrap();
    let path = sb.root().join("deep/er/new.txt");
    assert_eq!(out, format!("Created `{}` (5 bytes)", path.display()));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello");
    let out = call(
        &write,
        json!({"file_path": "deep/er/new.txt", "content": "hi"}),
    )
    .await
    .unwrap();
    assert!(out.starts_with("Overwrote"), "{out}");
    // Shorter content leaves nothing of the old behind.
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hi");
    assert!(write.needs_approval());
    assert!(!Write::new(&sb.ws).approval(false).needs_approval());
}

#[tokio::test]
async fn edit_replaces_one_unique_occurrence() {
    let sb = Sandbox::new();
    let path = sb.file("main.rs", "fn main() {\n    println!(\"hi\");\n}\n");
    let edit = Edit::new(&sb.ws);
    let out = call(
        &edit,
        json!({"file_path": "main.rs", "old_string": "\"hi\"", "new_string": "\"hello\""}),
    )
    .await
    .unwrap();
    assert!(out.contains("replaced 1 occurrence"), "{out}");
    assert_eq!(
        std::fs::read_to_string(path).unwrap(),
        "fn main() {\n    println!(\"hello\");\n}\n"
    );
}

#[tokio::test]
async fn edit_refuses_missing_ambiguous_and_no_op_changes_and_changes_nothing() {
    let sb = Sandbox::new();
    let path = sb.file("a.txt", "x = 1\nx = 1\ny = 2\n");
    let edit = Edit::new(&sb.ws);
    let err = call(
        &edit,
        json!({"file_path": "a.txt", "old_string": "x = 1", "new_string": "x = 3"}),
    )
    .await
    .unwrap_err();
    assert!(err.contains("occurs 2 times"), "{err}");
    assert!(err.contains("replace_all"), "{err}");
    let err = call(
        &edit,
        json!({"file_path": "a.txt", "old_string": "z = 9", "new_string": "z = 0"}),
    )
    .await
    .unwrap_err();
    assert!(err.contains("was not found"), "{err}");
    let err = call(
        &edit,
        json!({"file_path": "a.txt", "old_string": "y = 2", "new_string": "y = 2"}),
    )
    .await
    .unwrap_err();
    assert!(err.contains("are the same"), "{err}");
    let err = call(
        &edit,
        json!({"file_path": "a.txt", "old_string": "", "new_string": "q"}),
    )
    .await
    .unwrap_err();
    assert!(err.contains("`old_string` is empty"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "x = 1\nx = 1\ny = 2\n"
    );

    let out = call(
        &edit,
        json!({"file_path": "a.txt", "old_string": "x = 1", "new_string": "x = 3", "replace_all": true}),
    )
    .await
    .unwrap();
    assert!(out.contains("replaced 2 occurrences"), "{out}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "x = 3\nx = 3\ny = 2\n"
    );
    assert!(edit.needs_approval());
}

#[tokio::test]
async fn bad_input_is_a_tool_error_naming_the_tool() {
    let sb = Sandbox::new();
    let err = call(&Read::new(&sb.ws), json!({"path": "a.txt"}))
        .await
        .unwrap_err();
    assert!(err.contains("the input of `Read` is invalid"), "{err}");
    assert!(err.contains("file_path"), "{err}");
}
