"""The operator's commands behind `nmc migrate` and `nmc admin …`: onboarding and dev secrets
(onboarding), epochs, reports, tasks, forced transitions and KEK rotation (operations), the
daily beheer report's configuration (beheerrapport), and the migrator (migrate)."""
