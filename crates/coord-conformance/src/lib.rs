//! The conformance suite of the service, generic over the store.
//!
//! A store crate instantiates it once in a test file:
//!
//! ```ignore
//! coord_conformance::conformance_suite!(MyBackend::new());
//! ```
//!
//! which expands to one `#[tokio::test]` per case. Every case builds a fresh, empty
//! store through the [`Backend`], a [`Coordinator`] over it with a [`ManualClock`], and
//! exercises the service only through the [`Coordination`] interface the doors use.

pub mod cases;
mod harness;

pub use harness::{AGENT_TYPE, Backend, Door, Fixture, Harness, RawSql, agent, operator};

/// Expands to every conformance case as a test function.
#[macro_export]
macro_rules! conformance_suite {
    ($backend:expr) => {
        $crate::__async_cases!($backend;
            locks::locks_acquire_then_other_is_blocked,
            locks::locks_holder_refreshes_and_keeps_token,
            locks::locks_release_frees_for_others,
            locks::locks_release_refusals,
            locks::locks_ttl_bounds,
            locks::locks_expire_with_the_clock,
            locks::locks_fencing_tokens_increase_across_expiry_release_and_sweep,
            locks::locks_check_lists_live_locks,
            locks::locks_paths_are_normalised,
            locks::locks_concurrent_acquirers_get_one_winner,
            locks::locks_release_my_locks_frees_only_mine,
            locks::locks_and_leases_on_the_database_clock,
            locks::locks_check_edit_blocks_only_foreign_live_locks,
            files::files_read_write_round_trip_with_audit_events,
            files::files_attack_table,
            files::files_fenced_writes,
            files::files_fence_holds_while_the_lock_is_taken_over,
            files::files_concurrent_writers_never_tear_a_file,
            files::files_profiles_decide_who_reads_and_writes,
            patterns::patterns_directory_lock_covers_everything_below,
            patterns::patterns_glob_locks_overlap_conservatively,
            patterns::patterns_bad_spellings_are_refused_and_audited,
            patterns::patterns_message_the_holders_of_a_directory,
            patterns::patterns_racing_overlapping_acquirers_never_both_win,
            queue::queue_submit_and_get_task,
            queue::queue_claims_most_urgent_then_oldest,
            queue::queue_no_tasks_available,
            queue::queue_claim_filters_by_type,
            queue::queue_dependencies_block_until_completed,
            queue::queue_failure_cancels_dependents_transitively,
            queue::queue_completion_refusals,
            queue::queue_expired_claims_return_then_fail,
            queue::queue_heartbeat_extends_claim_leases,
            queue::queue_input_validation,
            queue::queue_listing_filters,
            queue::queue_concurrent_workers_claim_each_task_once,
            queue::queue_failure_cascade_races_with_new_dependents,
            sessions::sessions_register_and_discover,
            sessions::sessions_heartbeat,
            sessions::sessions_an_unprofiled_agent_type_is_told_why,
            sessions::sessions_cleanup_frees_dead_agents_only,
            sessions::sessions_cleanup_fails_tasks_out_of_attempts,
            sessions::sessions_cleanup_also_sweeps_expired_rows,
            sessions::sessions_cleanup_by_session_id,
            sessions::sessions_cleanup_by_an_agent_key_spares_live_sessions,
            sessions::sessions_mark_idle_keeps_locks,
            sessions::sessions_end_session_releases_hands_off_and_idles,
            handoffs::handoffs_write_and_read_newest_first,
            handoffs::handoffs_validation,
            memory::memory_merges_within_the_hour_only,
            memory::memory_concurrent_duplicates_merge,
            memory::memory_recall_ranks_text_tags_decay_and_feedback,
            memory::memory_recall_bounds_its_reading_in_a_large_store,
            memory::memory_forget_by_author_or_admin,
            memory::memory_prune_past_retention,
            memory::memory_skills_rank_by_effectiveness,
            memory::memory_working_memory_is_budgeted_and_session_scoped,
            network::network_policies_decide_and_log,
            network::network_worker_profiles_reach_their_model,
            agents::agents_preflight_allows_only_a_valid_verdict,
            spawn::agents_spawn_follow_stop_and_reclaim,
            spawn::agents_spawn_in_a_worktree_of_its_own,
            workflows::workflows_run_by_their_conditions_and_catch_up,
            workflows::workflows_swarm_members_drain_a_shared_queue,
            network::network_policy_changes_apply_to_the_next_request,
            verification::verification_policies_route_changesets,
            verification::verification_concurrent_resubmissions_record_one_changeset,
            verification::verification_workers_claim_and_report,
            verification::verification_concurrent_workers_claim_each_run_once,
            github::github_pushes_become_changesets,
            github::github_issues_and_branches_become_locks_and_tasks,
            github::github_actions_runs_finish_by_webhook,
            github::github_races_and_coord_locks,
            keys::keys_bind_identities_expire_and_revoke,
            profiles::profiles_builtin_are_seeded,
            profiles::profiles_assignment_precedence_and_least_privilege,
            profiles::profiles_only_trust_4_administers,
            profiles::profiles_file_modification_limit_under_concurrency,
            profiles::profiles_execution_time_and_api_calls,
            approvals::approvals_grant_once_for_that_agent_and_request,
            approvals::approvals_expire_and_denials_stick,
            approvals::approvals_an_approved_file_stays_usable,
            guardrails::guardrails_block_and_approve_once,
            guardrails::guardrails_trust_and_elevated_operations,
            guardrails::guardrails_block_destructive_completions,
            guardrails::guardrails_violations_are_counted,
            guardrails::guardrails_elevated_operations_notify_the_security_channel,
            guardrails::guardrails_pattern_registry_is_editable_by_trust_4,
            profiles::profiles_a_key_counts_across_sessions,
            profiles::profiles_keys_and_agent_sessions_reach_no_administration_by_type,
            approvals::approvals_are_spent_once_under_concurrency,
            messages::messages_direct_inbox_read_ack_and_threads,
            messages::messages_to_the_holders_of_a_file,
            messages::messages_to_a_team,
            audit::audit_records_every_operation_including_refusals,
            audit::audit_query_filters,
            audit::audit_rows_are_append_only,
            audit_chain::audit_chain_verifies_and_names_the_first_tampered_row,
            audit_chain::audit_chain_detects_rows_cut_from_the_end,
            audit_chain::audit_chain_stays_linear_under_concurrent_writers,
            audit_chain::audit_prune_leaves_a_signed_checkpoint,
            audit_chain::audit_query_scopes_filters_and_pages,
            audit_chain::audit_chain_verifies_awkward_values,
            audit::identity_is_validated,
            audit::status_summarises,
            stats::stats_count_the_fleet,
            audit::storage_failure_is_database_unavailable,
            registry::registry_every_audited_operation_writes_one_row_per_call,
            registry::registry_unknown_request_fields_are_refused_by_name,
        );
        $crate::__sync_cases!($backend;
            model::model_locks_state_machine,
            model::model_queue_state_machine,
        );
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __async_cases {
    ($backend:expr; $($module:ident :: $case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let backend = $backend;
                if !$crate::Backend::available(&backend).await {
                    return;
                }
                $crate::cases::$module::$case(&backend).await;
            }
        )*
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __sync_cases {
    ($backend:expr; $($module:ident :: $case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                let backend = $backend;
                let available = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap()
                    .block_on($crate::Backend::available(&backend));
                if !available {
                    return;
                }
                $crate::cases::$module::$case(&backend);
            }
        )*
    };
}
