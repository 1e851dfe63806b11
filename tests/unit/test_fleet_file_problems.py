"""Every problem of a waves file and of a provider file, word for word: the pydantic schemas say them as the
hand-written checks before them did (aicr_core/fleet/waves_schema.py, provider_schema.py)."""
from __future__ import annotations

import pytest
from testfixtures import ShouldRaise

from aicr_core.errors import UsageError
from aicr_core.fleet import access_providers, waves_file

# (the file's text, what [USAGE] says after `--waves w.yaml: `); None: the file is valid.
WAVES = [
    ('- a list\n',
     'not a Waves document (a YAML mapping with apiVersion, kind and waves)'),
    ('waves: [',
     'not YAML: while parsing a flow node'),
    ("kind: Waves\nwaves: [{name: a, contexts: ['*']}]\n",
     'apiVersion must be aicr.run/v1alpha1 (got None)'),
    ("apiVersion: v1\nkind: Waves\nwaves: [{name: a, contexts: ['*']}]\n",
     "apiVersion must be aicr.run/v1alpha1 (got 'v1')"),
    ("apiVersion: aicr.run/v1alpha1\nkind: Wave\nwaves: [{name: a, contexts: ['*']}]\n",
     "kind must be Waves (got 'Wave')"),
    ("apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: a, contexts: ['*']}]\nparallel: 3\n",
     'unknown key parallel (known: apiVersion, kind, waves, soak, maxFailures)'),
    (("apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: a, contexts: ['*']}]\nxxxxxxxxxxxx"
      'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx: 1\n'),
     ("unknown key 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'... (known: apiV"
      'ersion, kind, waves, soak, maxFailures)')),
    ("apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: a, contexts: ['*']}]\n7: 1\n",
     'unknown key 7 (known: apiVersion, kind, waves, soak, maxFailures)'),
    ('apiVersion: aicr.run/v1alpha1\nkind: Waves\n',
     'waves: at least one wave is needed'),
    ('apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: []\n',
     'waves: at least one wave is needed'),
    ('apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: {name: a}\n',
     'waves: at least one wave is needed'),
    ('apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [just-a-name]\n',
     'waves[0]: a wave is a mapping with name and contexts (or selector)'),
    ("apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{contexts: ['*']}]\n",
     'waves[0].name: every wave needs a name'),
    ("apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: '  ', contexts: ['*']}]\n",
     'waves[0].name: every wave needs a name'),
    ("apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: 3, contexts: ['*']}]\n",
     'waves[0].name: every wave needs a name'),
    ("apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: a, contexts: ['*'], soak: 5m}]\n",
     'unknown key waves[0].soak (known: name, contexts, selector, optional)'),
    (("apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: a, contexts: ['*']}, {name: a, co"
      "ntexts: ['*']}]\n"),
     "wave 'a': two waves have that name"),
    ('apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: a}]\n',
     "wave 'a': contexts must be a list of context names and globs"),
    ('apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: a, contexts: gpu-1}]\n',
     "wave 'a': contexts must be a list of context names and globs"),
    ('apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: a, contexts: []}]\n',
     "wave 'a': contexts must be a list of context names and globs"),
    ("apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: a, contexts: ['!']}]\n",
     "wave 'a': contexts must be a list of context names and globs"),
    ("apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: a, contexts: ['  ']}]\n",
     "wave 'a': contexts must be a list of context names and globs"),
    ('apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: a, contexts: [3]}]\n',
     "wave 'a': contexts must be a list of context names and globs"),
    (("apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: a, contexts: ['*'], optional: 'ye"
      "s'}]\n"),
     "wave 'a': optional must be true or false (got str)"),
    (("apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: a, contexts: ['*'], optional: 1}]"
      '\n'),
     "wave 'a': optional must be true or false (got int)"),
    ("apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: a, contexts: ['*']}]\nsoak: 1d\n",
     'soak: time: unknown unit "d" in duration "1d"'),
    ("apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: a, contexts: ['*']}]\nsoak: -5m\n",
     'soak: must not be negative (got -5m)'),
    ("apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: a, contexts: ['*']}]\nsoak: [1]\n",
     'soak: a Go duration such as 30m (got [1])'),
    ("apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: a, contexts: ['*']}]\nsoak: true\n",
     'soak: a Go duration such as 30m (got True)'),
    ("apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: a, contexts: ['*']}]\nsoak: 30\n",
     'soak: time: missing unit in duration "30"'),
    (("apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: a, contexts: ['*']}]\nmaxFailures:"
      ' -1\n'),
     'maxFailures: a whole number of clusters, 0 or more (got -1)'),
    (("apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: a, contexts: ['*']}]\nmaxFailures:"
      ' yes\n'),
     'maxFailures: a whole number of clusters, 0 or more (got True)'),
    (("apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: a, contexts: ['*']}]\nmaxFailures:"
      ' 1.5\n'),
     'maxFailures: a whole number of clusters, 0 or more (got 1.5)'),
    (("apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: a, contexts: ['*']}]\nmaxFailures:"
      " '2'\n"),
     "maxFailures: a whole number of clusters, 0 or more (got '2')"),
    ('apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: w, selector: [a]}]\n',
     "wave 'w': selector: a label selector is a mapping with matchLabels and/or matchExpressions"),
    (('apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: w, selector: {matchLabel: {a: b}}'
      '}]\n'),
     "wave 'w': selector: unknown key matchLabel (known: matchLabels, matchExpressions)"),
    (('apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: w, selector: {matchLabels: [a]}}]'
      '\n'),
     "wave 'w': selector: matchLabels: a mapping of label keys to values"),
    (('apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: w, selector: {matchLabels: {a: 1}'
      '}}]\n'),
     ('wave \'w\': selector: matchLabels: \'a\': keys and values are strings (quote a value such as "'
      'true")')),
    (("apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: w, selector: {matchLabels: {'a b'"
      ': c}}}]\n'),
     ("wave 'w': selector: key 'a b': a name is at most 63 characters of [A-Za-z0-9_.-], beginnin"
      'g and ending with a letter or digit')),
    (("apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: w, selector: {matchLabels: {a: 'b"
      " c'}}}]\n"),
     ("wave 'w': selector: value 'b c': a label value is at most 63 characters of [A-Za-z0-9_.-],"
      ' beginning and ending with a letter or digit, or empty')),
    (('apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: w, selector: {matchExpressions: {'
      'key: a}}}]\n'),
     "wave 'w': selector: matchExpressions: a list of {key, operator, values}"),
    (('apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: w, selector: {matchExpressions: ['
      'a]}}]\n'),
     "wave 'w': selector: matchExpressions[0]: a mapping with key, operator and values"),
    (('apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: w, selector: {matchExpressions: ['
      '{key: a, operator: In, values: [x], extra: 1}]}}]\n'),
     "wave 'w': selector: unknown key matchExpressions[0].extra (known: key, operator, values)"),
    (('apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: w, selector: {matchExpressions: ['
      '{key: 3, operator: Exists}]}}]\n'),
     "wave 'w': selector: matchExpressions[0].key: a label key"),
    (('apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: w, selector: {matchExpressions: ['
      "{key: 'a b', operator: Exists}]}}]\n"),
     ("wave 'w': selector: key 'a b': a name is at most 63 characters of [A-Za-z0-9_.-], beginnin"
      'g and ending with a letter or digit')),
    (('apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: w, selector: {matchExpressions: ['
      '{key: a, operator: Has}]}}]\n'),
     ("wave 'w': selector: matchExpressions[0].operator must be In, NotIn, Exists, DoesNotExist ("
      "got 'Has')")),
    (('apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: w, selector: {matchExpressions: ['
      '{key: a, operator: In, values: x}]}}]\n'),
     "wave 'w': selector: matchExpressions[0].values: a list of strings"),
    (('apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: w, selector: {matchExpressions: ['
      '{key: a, operator: In, values: [1]}]}}]\n'),
     "wave 'w': selector: matchExpressions[0].values: a list of strings"),
    (('apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: w, selector: {matchExpressions: ['
      '{key: a, operator: In}]}}]\n'),
     "wave 'w': selector: matchExpressions[0]: operator In needs values"),
    (('apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: w, selector: {matchExpressions: ['
      '{key: a, operator: Exists, values: [x]}]}}]\n'),
     "wave 'w': selector: matchExpressions[0]: operator Exists takes no values"),
    (('apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: w, selector: {matchExpressions: ['
      "{key: a, operator: In, values: ['b c']}]}}]\n"),
     ("wave 'w': selector: value 'b c': a label value is at most 63 characters of [A-Za-z0-9_.-],"
      ' beginning and ending with a letter or digit, or empty')),
    ('apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: w, selector: {}}]\n',
     None),
    ('apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: w, selector: null}]\n',
     "wave 'w': selector: a label selector is a mapping with matchLabels and/or matchExpressions"),
    (('apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: w, selector: {matchLabels: null, '
      'matchExpressions: null}}]\n'),
     None),
]
# (the file's text, what [USAGE] says after `--cluster-profile-providers p.json: `).
PROVIDERS = [
    ('{',
     'not JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)'),
    ('[]',
     'not a provider file (a JSON object with "providers")'),
    ('{}',
     'providers: at least one provider is needed (a list of {name, execConfig})'),
    ('{"providers": []}',
     'providers: at least one provider is needed (a list of {name, execConfig})'),
    ('{"providers": {}}',
     'providers: at least one provider is needed (a list of {name, execConfig})'),
    ('{"providers": [1]}',
     'providers[0]: a provider is an object with name and execConfig'),
    (('{"providers": [{"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1'
      '", "command": "c"}}], "provider": []}'),
     'unknown key provider (known: providers)'),
    (('{"providers": [{"execConfig": {"apiVersion": "client.authentication.k8s.io/v1", "command":'
      ' "c"}}]}'),
     'providers[0].name: every provider needs a name'),
    (('{"providers": [{"name": " ", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1'
      '", "command": "c"}}]}'),
     'providers[0].name: every provider needs a name'),
    (('{"providers": [{"name": 3, "execConfig": {"apiVersion": "client.authentication.k8s.io/v1",'
      ' "command": "c"}}]}'),
     'providers[0].name: every provider needs a name'),
    (('{"providers": [{"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1'
      '", "command": "c"}, "extra": 1}]}'),
     ('unknown key providers[0].extra (known: name, execConfig, profileSourcedCLIArgsPolicy, prof'
      'ileSourcedEnvVarsPolicy)')),
    (('{"providers": [{"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1'
      '", "command": "c"}}, {"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s'
      '.io/v1", "command": "c"}}]}'),
     "provider 'a': two providers have that name"),
    (('{"providers": [{"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1'
      '", "command": "c"}, "profileSourcedCLIArgsPolicy": "Prepend"}]}'),
     "provider 'a': profileSourcedCLIArgsPolicy must be Append, Ignore or absent (got 'Prepend')"),
    (('{"providers": [{"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1'
      '", "command": "c"}, "profileSourcedCLIArgsPolicy": 3}]}'),
     "provider 'a': profileSourcedCLIArgsPolicy must be Append, Ignore or absent (got 3)"),
    (('{"providers": [{"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1'
      '", "command": "c"}, "profileSourcedEnvVarsPolicy": "Merge"}]}'),
     ("provider 'a': profileSourcedEnvVarsPolicy must be AppendIfNotExists, Replace, Ignore or ab"
      "sent (got 'Merge')")),
    ('{"providers": [{"name": "a"}]}',
     "provider 'a': execConfig: every provider needs an execConfig with a command"),
    ('{"providers": [{"name": "a", "execConfig": []}]}',
     "provider 'a': execConfig: every provider needs an execConfig with a command"),
    (('{"providers": [{"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1'
      '", "command": "c", "comand": "d"}}]}'),
     ("provider 'a': unknown key execConfig.comand (known: apiVersion, command, args, env, provid"
      'eClusterInfo, interactiveMode, installHint)')),
    (('{"providers": [{"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1'
      '"}}]}'),
     ("provider 'a': execConfig.command: every provider needs the command of its credentials plug"
      'in')),
    (('{"providers": [{"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1'
      '", "command": ""}}]}'),
     ("provider 'a': execConfig.command: every provider needs the command of its credentials plug"
      'in')),
    (('{"providers": [{"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1'
      '", "command": 3}}]}'),
     ("provider 'a': execConfig.command: every provider needs the command of its credentials plug"
      'in')),
    (('{"providers": [{"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1'
      '", "command": "a\\u0000b"}}]}'),
     "provider 'a': execConfig.command: a command holds no NUL character"),
    ('{"providers": [{"name": "a", "execConfig": {"command": "c"}}]}',
     ("provider 'a': execConfig.apiVersion must be client.authentication.k8s.io/v1 or client.auth"
      'entication.k8s.io/v1beta1 (got None)')),
    ('{"providers": [{"name": "a", "execConfig": {"apiVersion": "v2", "command": "c"}}]}',
     ("provider 'a': execConfig.apiVersion must be client.authentication.k8s.io/v1 or client.auth"
      "entication.k8s.io/v1beta1 (got 'v2')")),
    (('{"providers": [{"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1'
      '", "command": "c", "args": "x"}}]}'),
     "provider 'a': execConfig.args: a list of strings (without NUL characters)"),
    (('{"providers": [{"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1'
      '", "command": "c", "args": [1]}}]}'),
     "provider 'a': execConfig.args: a list of strings (without NUL characters)"),
    (('{"providers": [{"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1'
      '", "command": "c", "args": ["a\\u0000"]}}]}'),
     "provider 'a': execConfig.args: a list of strings (without NUL characters)"),
    (('{"providers": [{"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1'
      '", "command": "c", "env": "x"}}]}'),
     ("provider 'a': execConfig.env: a list of {name, value} strings (a name without '=' or NUL, "
      'a value without NUL)')),
    (('{"providers": [{"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1'
      '", "command": "c", "env": [{"name": "X"}]}}]}'),
     ("provider 'a': execConfig.env: a list of {name, value} strings (a name without '=' or NUL, "
      'a value without NUL)')),
    (('{"providers": [{"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1'
      '", "command": "c", "env": [{"name": "X=Y", "value": "v"}]}}]}'),
     ("provider 'a': execConfig.env: a list of {name, value} strings (a name without '=' or NUL, "
      'a value without NUL)')),
    (('{"providers": [{"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1'
      '", "command": "c", "env": [{"name": "X", "value": 1}]}}]}'),
     ("provider 'a': execConfig.env: a list of {name, value} strings (a name without '=' or NUL, "
      'a value without NUL)')),
    (('{"providers": [{"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1'
      '", "command": "c", "env": [{"name": "X", "value": "a\\u0000"}]}}]}'),
     ("provider 'a': execConfig.env: a list of {name, value} strings (a name without '=' or NUL, "
      'a value without NUL)')),
    (('{"providers": [{"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1'
      '", "command": "c", "env": ["x"]}}]}'),
     ("provider 'a': execConfig.env: a list of {name, value} strings (a name without '=' or NUL, "
      'a value without NUL)')),
    (('{"providers": [{"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1'
      '", "command": "c", "provideClusterInfo": "yes"}}]}'),
     "provider 'a': execConfig.provideClusterInfo: true or false"),
    (('{"providers": [{"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1'
      '", "command": "c", "interactiveMode": "Sometimes"}}]}'),
     ("provider 'a': execConfig.interactiveMode must be Never, IfAvailable, Always (got 'Sometime"
      "s')")),
    (('{"providers": [{"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1'
      '", "command": "c", "installHint": 3}}]}'),
     "provider 'a': execConfig.installHint: a string"),
]


@pytest.mark.parametrize(("text", "message"), WAVES)
def test_a_waves_file_says_each_problem_as_it_always_did(text: str, message: str | None) -> None:
    if message is None:
        waves_file.parse(text, "w.yaml")
        return
    with ShouldRaise(UsageError(f"--waves w.yaml: {message}")):
        waves_file.parse(text, "w.yaml")


@pytest.mark.parametrize(("text", "message"), PROVIDERS)
def test_a_provider_file_says_each_problem_as_it_always_did(text: str, message: str) -> None:
    with ShouldRaise(UsageError(f"--cluster-profile-providers p.json: {message}")):
        access_providers.parse(text, "p.json")
