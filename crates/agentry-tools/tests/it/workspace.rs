//! Confinement: every file tool resolves paths inside the workspace, and refuses `..`, absolute
//! paths and symbolic links that lead out, with an error naming what was refused and the root.

use crate::common::{Sandbox, call};
use agentry::Tool;
use agentry::prelude::*;
use agentry_tools::{Edit, Error, Glob, Grep, Read, Workspace, Write};
use std::os::unix::fs::symlink;

#[test]
fn relative_and_absolute_paths_inside_the_root_resolve() {
    let sb = Sandbox::new();
    let root = sb.root();
    assert_eq!(sb.ws.resolve("a/b.txt").unwrap(), root.join("a/b.txt"));
    assert_eq!(sb.ws.resolve("./a/../b.txt").unwrap(), root.join("b.txt"));
    let abs = root.join("x/y.rs");
    assert_eq!(sb.ws.resolve(abs.to_str().unwrap()).unwrap(), abs);
    assert_eq!(sb.ws.resolve(".").unwrap(), root);
}

#[test]
fn traversal_out_of_the_root_is_refused_and_says_so() {
    let sb = Sandbox::new();
    sb.file("a/inside.txt", "x");
    for path in [
        "../outside/secret",
        "a/../../outside",
        "..",
        "a/../../root/../outside/x",
    ] {
        let err = sb.ws.resolve(path).unwrap_err();
        assert!(
            matches!(err, Error::OutsideWorkspace { .. }),
            "{path}: {err}"
        );
        let msg = err.to_string();
        assert!(msg.contains(&format!("refused `{path}`")), "{msg}");
        assert!(msg.contains(sb.root().to_str().unwrap()), "{msg}");
        assert!(msg.contains("`..` climbs out"), "{msg}");
    }
    // Going out and back in lands inside: allowed.
    assert_eq!(
        sb.ws.resolve("../root/a/inside.txt").unwrap(),
        sb.root().join("a/inside.txt")
    );
}

#[test]
fn absolute_paths_outside_the_root_are_refused() {
    let sb = Sandbox::new();
    let outside = sb.outside().join("x.txt");
    for path in ["/etc/passwd", outside.to_str().unwrap(), "/"] {
        let err = sb.ws.resolve(path).unwrap_err();
        assert!(
            err.to_string()
                .contains("an absolute path outside the root"),
            "{err}"
        );
    }
}

#[test]
fn symbolic_links_that_lead_out_are_refused_for_files_and_directories() {
    let sb = Sandbox::new();
    std::fs::write(sb.outside().join("secret.txt"), "s3cret").unwrap();
    symlink(sb.outside().join("secret.txt"), sb.root().join("link.txt")).unwrap();
    symlink(sb.outside(), sb.root().join("linkdir")).unwrap();
    // A relative link that climbs out.
    symlink("../outside", sb.root().join("rel")).unwrap();
    for path in [
        "link.txt",
        "linkdir/secret.txt",
        "linkdir/new.txt",
        "rel/secret.txt",
    ] {
        let err = sb.ws.resolve(path).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("symbolic link"), "{path}: {msg}");
        assert!(msg.contains(sb.outside().to_str().unwrap()), "{msg}");
    }
    // A link that stays inside is fine.
    sb.file("real/file.txt", "ok");
    symlink("real", sb.root().join("alias")).unwrap();
    assert_eq!(
        sb.ws.resolve("alias/file.txt").unwrap(),
        sb.root().join("real/file.txt")
    );
}

#[test]
fn a_dangling_link_pointing_out_is_refused_before_anything_is_created() {
    let sb = Sandbox::new();
    let target = sb.outside().join("created-by-write.txt");
    symlink(&target, sb.root().join("dangling")).unwrap();
    assert!(sb.ws.resolve("dangling").is_err());
    assert!(!target.exists());
}

#[test]
fn a_link_loop_is_an_error_not_a_hang() {
    let sb = Sandbox::new();
    symlink("b", sb.root().join("a")).unwrap();
    symlink("a", sb.root().join("b")).unwrap();
    let err = sb.ws.resolve("a/x").unwrap_err();
    assert!(err.to_string().contains("symbolic links"), "{err}");
}

#[test]
fn a_root_that_is_not_a_directory_is_refused() {
    let sb = Sandbox::new();
    let file = sb.file("f.txt", "x");
    let err = Workspace::new(&file).unwrap_err();
    assert!(err.to_string().contains("not a directory"), "{err}");
    let err = Workspace::new(sb.root().join("missing")).unwrap_err();
    assert!(
        err.to_string().contains("give an existing directory"),
        "{err}"
    );
}

#[tokio::test]
async fn every_file_tool_refuses_paths_outside_as_a_tool_error() {
    let sb = Sandbox::new();
    std::fs::write(sb.outside().join("secret.txt"), "s3cret").unwrap();
    symlink(sb.outside(), sb.root().join("linkdir")).unwrap();
    let root = sb.root().display().to_string();
    let secret = sb.outside().join("secret.txt").display().to_string();
    let cases: Vec<(Box<dyn Tool>, Value)> = vec![
        (
            Box::new(Read::new(&sb.ws)),
            json!({"file_path": "../outside/secret.txt"}),
        ),
        (Box::new(Read::new(&sb.ws)), json!({"file_path": secret})),
        (
            Box::new(Read::new(&sb.ws)),
            json!({"file_path": "linkdir/secret.txt"}),
        ),
        (
            Box::new(Write::new(&sb.ws)),
            json!({"file_path": "linkdir/secret.txt", "content": "pwned"}),
        ),
        (
            Box::new(Write::new(&sb.ws)),
            json!({"file_path": "linkdir/sub/new.txt", "content": "pwned"}),
        ),
        (
            Box::new(Edit::new(&sb.ws)),
            json!({"file_path": "linkdir/secret.txt", "old_string": "s3cret", "new_string": "x"}),
        ),
        (
            Box::new(Glob::new(&sb.ws)),
            json!({"pattern": "*", "path": "linkdir"}),
        ),
        (
            Box::new(Grep::new(&sb.ws)),
            json!({"pattern": "s3cret", "path": "../outside"}),
        ),
    ];
    for (tool, input) in cases {
        let err = call(tool.as_ref(), input.clone()).await.unwrap_err();
        assert!(err.contains("outside the workspace root"), "{input}: {err}");
        assert!(err.contains(&root), "{input}: {err}");
    }
    assert_eq!(
        std::fs::read_to_string(sb.outside().join("secret.txt")).unwrap(),
        "s3cret"
    );
    assert!(!sb.outside().join("sub").exists());
}

#[tokio::test]
async fn a_directory_replaced_by_a_link_after_a_first_write_is_refused_on_the_next() {
    let sb = Sandbox::new();
    let write = Write::new(&sb.ws);
    let read = Read::new(&sb.ws);
    call(&write, json!({"file_path": "a/f.txt", "content": "one"}))
        .await
        .unwrap();
    // Someone swaps the directory for a link out of the workspace.
    std::fs::write(sb.outside().join("f.txt"), "outside").unwrap();
    std::fs::remove_dir_all(sb.root().join("a")).unwrap();
    symlink(sb.outside(), sb.root().join("a")).unwrap();
    let err = call(&write, json!({"file_path": "a/f.txt", "content": "two"}))
        .await
        .unwrap_err();
    assert!(err.contains("symbolic link"), "{err}");
    let err = call(&read, json!({"file_path": "a/f.txt"}))
        .await
        .unwrap_err();
    assert!(err.contains("outside the workspace root"), "{err}");
    assert_eq!(
        std::fs::read_to_string(sb.outside().join("f.txt")).unwrap(),
        "outside"
    );
}
